//! The flags of `ringbench fleet kubernetes` besides the run's (`Cli`, flattened beside them in
//! `command.rs`), as written: `fleet::JobSpec::from_flags` checks them.

use clap::Args;

/// `ringbench fleet kubernetes`'s own flags.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Fleet options")]
pub struct JobFlags {
    /// Pods (client machines) to split the run over; each runs --shards N with its index from
    /// JOB_COMPLETION_INDEX, on its own node (pod anti-affinity)
    #[arg(long = "pods", value_name = "N")]
    pub pods: Option<String>,
    /// Container image whose PATH has ringbench [default: ringbench:VERSION]
    #[arg(long = "image", value_name = "IMAGE")]
    pub image: Option<String>,
    /// The pods start this long after rendering; apply the manifest before [default: 60]
    #[arg(long = "lead", value_name = "SECONDS")]
    pub lead: Option<String>,
    /// The Job's name [default: ringbench-START]
    #[arg(long = "name", value_name = "NAME")]
    pub name: Option<String>,
    /// The Job's namespace [default: kubectl's]
    #[arg(long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// Memory each pod asks for; cores follow --threads [default: 512Mi]
    #[arg(long = "memory", value_name = "QUANTITY")]
    pub memory: Option<String>,
    /// The server's password, from key KEY (default: password) of Secret NAME, given to the pods as
    /// REDISCLI_AUTH (-a and passwords in -u are refused: they would be in the Job)
    #[arg(long = "auth-secret", value_name = "NAME[:KEY]")]
    pub auth_secret: Option<String>,
    /// The pods' seccomp profile: localhost[:PATH] (default: deploy/seccomp/ringbench-io-uring.json
    /// installed on every node as profiles/ringbench-io-uring.json under kubelet's seccomp directory,
    /// RuntimeDefault plus io_uring, which RuntimeDefault commonly refuses), unconfined or runtime-default
    #[arg(long = "seccomp", value_name = "PROFILE")]
    pub seccomp: Option<String>,
}
