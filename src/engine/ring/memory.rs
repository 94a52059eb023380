//! How much request-buffer memory a test needs, and how much the machine has (checked before a test).

use crate::config::EngineSettings;

/// The request buffer memory a test needs over all executors: one buffer of `-P` requests per
/// connection, or per executor when every connection sends the same bytes (a closed-loop phase, `rps`
/// `None`, of a fixed template).
pub(crate) fn request_memory(
    cfg: &EngineSettings,
    test: &crate::workload::TestSpec,
    shards: usize,
    rps: Option<f64>,
) -> u64 {
    let depth = cfg.load.pipeline as u64;
    if let Some(r) = &test.replay {
        return cfg.load.clients as u64 * depth * r.max_request_len() as u64;
    }
    match crate::engine::schedule::composer_for(cfg, test, rps) {
        Some(c) => cfg.load.clients as u64 * depth * c.max_request_len() as u64,
        None if test.template.has_placeholders() => {
            cfg.load.clients as u64 * depth * test.template.bytes().len() as u64
        }
        None => shards as u64 * depth * test.template.bytes().len() as u64,
    }
}

/// This machine's memory in bytes, from /proc/meminfo.
pub(crate) fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
