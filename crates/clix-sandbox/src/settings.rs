//! The `[sandbox]` section of the configuration.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How OS programs run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Inside bubblewrap (the default).
    Bwrap,
    /// Directly on the host. UNSAFE: the agent can touch anything you can.
    Host,
    /// No OS tier: only the in-process commands exist.
    Off,
}

/// Isolation and limits of the OS tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// bwrap (the default), host (UNSANDBOXED, by explicit choice) or off.
    pub mode: SandboxMode,
    /// Give sandboxed programs the host's network (off by default).
    pub network: bool,
    /// Extra host paths mounted read-only.
    pub extra_ro: Vec<PathBuf>,
    /// Extra host paths mounted read-write.
    pub extra_rw: Vec<PathBuf>,
    /// Extra environment variables passed through (secret-looking names never are).
    pub env: Vec<String>,
    /// Memory of one run (the program and all it starts), in MiB.
    pub memory_mb: u64,
    /// Processes and threads of one run (the program and all it starts).
    pub max_processes: u64,
    /// Largest file a sandboxed program may write, in MiB.
    pub max_file_size_mb: u64,
    /// Open files per process.
    pub max_open_files: u64,
    /// stdout and stderr kept per run of a hub tool's self-test (and any run
    /// whose caller sets no cap), in MiB; the rest is counted, not kept. A
    /// program or hub tool in a command line keeps up to the line's memory
    /// budget instead (`[limits] max_memory_bytes`).
    pub output_cap_mb: u64,
    /// A command line that reads a workspace file at least this large (MiB)
    /// and uses only standard tools runs whole in the sandbox's GNU bash.
    pub big_file_mb: u64,
    /// A command line of standard tools that walks a folder holding at least
    /// this many entries (`find`, `grep -r`, `du`, `ls -R`) runs whole in the
    /// sandbox's GNU bash, which reads listings where the shell stats entries.
    pub big_tree_entries: usize,
    /// Keep the next run's sandbox set up ahead (its namespaces, mounts,
    /// filter and cgroups) while the session is idle, so a run starts in
    /// the time an exec takes. Costs one waiting process per session.
    pub keep_ready: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            mode: SandboxMode::Bwrap,
            network: false,
            extra_ro: Vec::new(),
            extra_rw: Vec::new(),
            env: Vec::new(),
            memory_mb: 4096,
            max_processes: 512,
            max_file_size_mb: 4096,
            max_open_files: 1024,
            output_cap_mb: 64,
            big_file_mb: 8,
            big_tree_entries: 5000,
            keep_ready: true,
        }
    }
}
