//! The `[sandbox]` section of the configuration.

use std::path::PathBuf;

use clix_common::is_secret_name;
use clix_common::settings::{BadValue, Validate, at_least_one};
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

/// The most MiB a size setting may give: the sandbox counts in bytes
/// (`memory_mb << 20`), and a larger number would wrap to a small one.
const MAX_MIB: u64 = u64::MAX >> 20;

impl Validate for SandboxSettings {
    /// A run needs memory, a process, files and output to exist at all;
    /// a size must fit in bytes; mounts are absolute host paths and passed
    /// variables are names.
    fn validate(&self) -> Vec<BadValue> {
        let mut bad = Vec::new();
        let sizes = [
            ("memory_mb", self.memory_mb, 1, "MiB of one run"),
            ("max_file_size_mb", self.max_file_size_mb, 1, "MiB of a file a program writes"),
            ("output_cap_mb", self.output_cap_mb, 1, "MiB of output kept"),
            // 0: every file read sends the line to the sandbox's GNU tools.
            ("big_file_mb", self.big_file_mb, 0, "MiB"),
        ];
        for (key, value, least, what) in sizes {
            if !(least..=MAX_MIB).contains(&value) {
                bad.push(BadValue::new(key, value, format!("from {least} to {MAX_MIB} ({what})")));
            }
        }
        bad.extend(at_least_one("max_processes", self.max_processes, "processes and threads of one run"));
        bad.extend(at_least_one("max_open_files", self.max_open_files, "open files per process"));
        for (key, paths) in [("extra_ro", &self.extra_ro), ("extra_rw", &self.extra_rw)] {
            for path in paths.iter().filter(|p| !p.is_absolute()) {
                bad.push(BadValue::new(key, format!("{:?}", path.display()), "absolute host paths (/srv/data)"));
            }
        }
        for name in &self.env {
            let allowed = if !is_variable_name(name) {
                "variable names (letters, digits and _, not first a digit)"
            } else if is_secret_name(name) {
                // The environment's allowlist drops it whatever this says.
                "names that hold no secret: a secret-looking name is never passed to a sandboxed program"
            } else {
                continue;
            };
            bad.push(BadValue::new("env", format!("{name:?}"), allowed));
        }
        bad
    }
}

/// A name the environment can hold and a shell can read,
/// `[A-Za-z_][A-Za-z0-9_]*`: what `[sandbox] env` and a hub tool's `env` may name.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (the settings, every value refused) — and the defaults are allowed.
    #[test]
    fn values_a_run_cannot_have_are_refused() {
        let d = SandboxSettings::default;
        let cases = [
            (d(), vec![]),
            (SandboxSettings { memory_mb: 0, ..d() }, vec!["memory_mb = 0: from 1 to 17592186044415 (MiB of one run)"]),
            (SandboxSettings { memory_mb: 1 << 44, ..d() }, vec!["memory_mb = 17592186044416: from 1 to"]),
            (SandboxSettings { big_file_mb: 0, big_tree_entries: 0, ..d() }, vec![]),
            (
                SandboxSettings { max_processes: 0, max_open_files: 0, output_cap_mb: 0, ..d() },
                vec!["output_cap_mb = 0: from 1 to", "max_processes = 0: at least 1", "max_open_files = 0: at least 1"],
            ),
            (
                SandboxSettings {
                    extra_ro: vec!["data".into(), "/srv".into()],
                    env: vec!["A-B".into(), "OK_1".into()],
                    ..d()
                },
                vec!["extra_ro = \"data\": absolute host paths", "env = \"A-B\": variable names"],
            ),
            (
                SandboxSettings { env: vec!["GITHUB_TOKEN".into(), "PROJECT_MODE".into()], ..d() },
                vec!["env = \"GITHUB_TOKEN\": names that hold no secret"],
            ),
        ];
        for (settings, want) in cases {
            let got: Vec<String> = settings.validate().iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (got, want) in got.iter().zip(&want) {
                assert!(got.starts_with(want), "{got} / {want}");
            }
        }
    }
}
