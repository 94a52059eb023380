//! Live metrics flags: `--metrics-listen` / `--metrics-linger` (a Prometheus endpoint) and `--statsd*`
//! (a StatsD push), checked without I/O. The StatsD host name is looked up when the run starts.

use crate::cli::Cli;
use crate::config::error::{UsageError, usage};
use std::net::SocketAddr;
use std::time::Duration;

/// Where the live figures of a run go.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSettings {
    /// `--metrics-listen`: the address `/metrics` is served on.
    pub listen: Option<SocketAddr>,
    /// `--metrics-linger`: how long the endpoint waits after the run for a scrape of the final figures.
    pub linger: Duration,
    /// `--statsd` / `--statsd-host`: where the once-a-second figures are sent.
    pub statsd: Option<StatsdSettings>,
}

/// A StatsD destination and how the metric names start (`<prefix>.<label>.<test>.<metric>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsdSettings {
    pub host: String,
    pub port: u16,
    pub prefix: String,
    pub label: String,
    /// memtier's names, `<prefix>.<label>.<metric>`: no test segment (its run is one test).
    pub flat: bool,
}

/// The live metrics of `cli`, or `None` when neither an endpoint nor a StatsD server is asked for.
pub fn from_cli(cli: &Cli) -> Result<Option<MetricsSettings>, UsageError> {
    let listen = match cli.metrics_listen.as_deref() {
        None => None,
        Some(a) => Some(a.parse::<SocketAddr>().map_err(|_| {
            usage(format!(
                "invalid value '{a}' for '--metrics-listen': give a numeric ADDR:PORT, like 127.0.0.1:9464 or [::1]:9464"
            ))
        })?),
    };
    let linger = match cli.metrics_linger.parse::<f64>() {
        Ok(s) if (0.0..=3600.0).contains(&s) => Duration::from_secs_f64(s),
        _ => {
            return Err(usage(format!(
                "invalid value '{}' for '--metrics-linger': must be a number of seconds from 0 to 3600",
                cli.metrics_linger
            )));
        }
    };
    let statsd = match (cli.statsd.as_deref(), cli.statsd_host.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--statsd and --statsd-host both name the StatsD server: give one of them",
            ));
        }
        (Some(a), None) => {
            let (host, port) = a
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
                .filter(|(h, p)| !h.is_empty() && *p > 0)
                .ok_or_else(|| {
                    usage(format!(
                        "invalid value '{a}' for '--statsd': give HOST:PORT, like localhost:8125"
                    ))
                })?;
            Some((host.to_string(), port))
        }
        (None, Some("")) => {
            return Err(usage(
                "invalid value '' for '--statsd-host': give a host name",
            ));
        }
        (None, Some(h)) => Some((h.to_string(), cli.statsd_port)),
        (None, None) => None,
    };
    if cli.statsd_port == 0 {
        return Err(usage(
            "invalid value '0' for '--statsd-port': must be between 1 and 65535",
        ));
    }
    for (flag, v) in [
        ("--statsd-prefix", &cli.statsd_prefix),
        ("--statsd-run-label", &cli.statsd_run_label),
    ] {
        if v.is_empty() || v.contains([':', '|', '@', '\n', ' ']) {
            return Err(usage(format!(
                "invalid value '{v}' for '{flag}': give a name without spaces, ':', '|' or '@'"
            )));
        }
    }
    if listen.is_none() && statsd.is_none() {
        return Ok(None);
    }
    Ok(Some(MetricsSettings {
        listen,
        linger,
        statsd: statsd.map(|(host, port)| StatsdSettings {
            host,
            port,
            prefix: cli.statsd_prefix.clone(),
            label: cli.statsd_run_label.clone(),
            flat: false,
        }),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<MetricsSettings>, UsageError> {
        let mut argv = vec!["ringbench"];
        argv.extend_from_slice(args);
        from_cli(&Cli::parse_args(argv).unwrap())
    }

    #[test]
    fn flags_become_settings() {
        assert_eq!(parse(&[]).unwrap(), None);
        let m = parse(&["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "2"])
            .unwrap()
            .unwrap();
        assert_eq!(m.listen, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(m.linger, Duration::from_secs(2));
        let m = parse(&["--statsd", "stats.lab:9125", "--statsd-run-label", "a"])
            .unwrap()
            .unwrap();
        let s = m.statsd.unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.label.as_str()),
            ("stats.lab", 9125, "a")
        );
        let s = parse(&["--statsd-host", "h"])
            .unwrap()
            .unwrap()
            .statsd
            .unwrap();
        assert_eq!((s.port, s.prefix.as_str()), (8125, "ringbench"));
    }

    #[test]
    fn bad_values_name_their_flag() {
        for (args, flag) in [
            (&["--metrics-listen", "localhost"][..], "'--metrics-listen'"),
            (
                &["--metrics-listen", "1.2.3.4:0", "--metrics-linger", "-1"],
                "'--metrics-linger'",
            ),
            (&["--statsd", "nohost"], "'--statsd'"),
            (&["--statsd", "h:0"], "'--statsd'"),
            (
                &["--statsd-host", "h", "--statsd-prefix", "a b"],
                "'--statsd-prefix'",
            ),
            (
                &["--statsd-host", "h", "--statsd-port", "0"],
                "'--statsd-port'",
            ),
        ] {
            let e = parse(args).unwrap_err().0;
            assert!(e.contains(flag), "{args:?}: {e}");
        }
        assert!(parse(&["--statsd", "a:1", "--statsd-host", "b"]).is_err());
    }
}
