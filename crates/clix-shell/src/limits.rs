//! The engine's limits, chosen on purpose rather than inherited.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Limits applied to every command line a [`crate::Session`] runs.
///
/// The defaults suit an agent: generous enough for real work on a project
/// (a `for` loop over a few thousand files, tens of MB of output), bounded
/// enough that a runaway loop or a flood of output ends with a clear error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellLimits {
    /// Wall-clock time of one command line, in seconds (default 30).
    pub timeout_secs: u64,
    /// Commands one command line may run (default 100,000).
    pub max_commands: usize,
    /// Iterations of a single loop (default 100,000).
    pub max_loop_iterations: usize,
    /// Iterations of all loops of one line together (default 1,000,000).
    pub max_total_loop_iterations: usize,
    /// Bytes of stdout and of stderr kept per line (default 64 MiB each);
    /// Layer 2 spills long outputs to a file, so this is a memory bound only.
    pub max_output_bytes: usize,
    /// Bytes all commands of one line may read together (default 100 MB).
    pub max_input_bytes: u64,
    /// Calls one session may make (default 1,000,000). bashkit's own default
    /// of 1,000 would end a long agent conversation or MCP connection.
    pub max_session_calls: u64,
    /// Commands one session may run over all its calls (default 100,000,000).
    pub max_session_commands: u64,
}

impl Default for ShellLimits {
    fn default() -> Self {
        ShellLimits {
            timeout_secs: 30,
            max_commands: 100_000,
            max_loop_iterations: 100_000,
            max_total_loop_iterations: 1_000_000,
            max_output_bytes: 64 * 1024 * 1024,
            max_input_bytes: 100_000_000,
            max_session_calls: 1_000_000,
            max_session_commands: 100_000_000,
        }
    }
}

impl ShellLimits {
    /// The wall-time limit of one line.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    pub(crate) fn to_bashkit(&self) -> bashkit::ExecutionLimits {
        bashkit::ExecutionLimits::new()
            .timeout(self.timeout())
            .max_commands(self.max_commands)
            .max_loop_iterations(self.max_loop_iterations)
            .max_total_loop_iterations(self.max_total_loop_iterations)
            .max_stdout_bytes(self.max_output_bytes)
            .max_stderr_bytes(self.max_output_bytes)
            .max_aggregate_input_bytes(self.max_input_bytes)
    }

    pub(crate) fn to_bashkit_session(&self) -> bashkit::SessionLimits {
        bashkit::SessionLimits::new()
            .max_exec_calls(self.max_session_calls)
            .max_total_commands(self.max_session_commands)
    }
}
