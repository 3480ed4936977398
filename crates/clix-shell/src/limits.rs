//! The engine's limits, chosen on purpose rather than inherited.
//!
//! A line is bounded by two things only: the time it may take and the memory
//! it may hold. bashkit's own bounds are counts (commands, loop iterations,
//! bytes read, fixed caps per builtin), sized for a sandbox that distrusts
//! its scripts; on a real repository they cut ordinary work short (`find`
//! over 30,000 files, `seq 1 300000`), so each is set from these two here,
//! and the counts are there only for a person who asks for them.

use std::time::Duration;

use bashkit::{ExecutionBudgetExceeded, LimitExceeded};
use clix_common::settings::{BadValue, Validate, at_least_one, seconds};
use serde::{Deserialize, Serialize};

/// A count limit nobody set: out of reach within any time limit (a line
/// runs a few million commands a second at most), yet far from overflow in
/// bashkit's arithmetic.
const NO_COUNT: usize = 1 << 40;

/// Most elements of one brace range (`{1..N}`): bashkit expands a word into
/// at most 10 MiB, so a range is refused before running past this many
/// rather than cut while expanding.
const BRACE_ELEMENTS: usize = 1_000_000;

/// Limits applied to every command line a [`crate::Shell`] runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellLimits {
    /// Wall-clock time of one command line, in seconds (default 30).
    pub timeout_secs: u64,
    /// Bytes one line may hold in memory (default 1 GiB): what one command
    /// builds before handing it on (`find`'s list, `seq > file`, awk's
    /// output), the data between stages, variables, and the line's own
    /// stdout and stderr. Output streamed from one stage to the next is not
    /// held. Reaching it stops the line with an error, never a shorter
    /// answer. (`max_output_bytes`, its older name, is read as this.)
    #[serde(alias = "max_output_bytes")]
    pub max_memory_bytes: usize,
    /// Bytes of the session's in-memory files (default 100 MB): everything
    /// written outside the workspace (`/tmp`, `~`). They live as long as the
    /// session, so this, times the number of sessions, bounds what a
    /// long-lived server holds in files. One file may fill it.
    pub max_tmp_bytes: u64,
    /// Bytes one line may take of the workspace's disk (default 4 GiB),
    /// whoever writes them (the shell, a sandboxed program, a hub tool): the
    /// fall in the workspace filesystem's free space while the line runs,
    /// checked every 50 ms. Passing it stops the line; what was written
    /// stays. Another program writing to the same filesystem at the same
    /// time counts too.
    pub max_workspace_growth_bytes: u64,
    /// Commands one command line may run (default: no count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_commands: Option<usize>,
    /// Iterations of a single loop (default: no count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_loop_iterations: Option<usize>,
    /// Iterations of all loops of one line together (default: no count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_loop_iterations: Option<usize>,
    /// Bytes all commands of one line may read together (default: no count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_bytes: Option<u64>,
    /// Calls one session may make (default 1,000,000). bashkit's own default
    /// of 1,000 would end a long agent conversation or MCP connection.
    pub max_session_calls: u64,
    /// Commands one session may run over all its calls (default: no count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_session_commands: Option<u64>,
}

impl Default for ShellLimits {
    fn default() -> Self {
        ShellLimits {
            timeout_secs: 30,
            max_memory_bytes: 1 << 30,
            max_tmp_bytes: 100_000_000,
            max_workspace_growth_bytes: 4 << 30,
            max_commands: None,
            max_loop_iterations: None,
            max_total_loop_iterations: None,
            max_input_bytes: None,
            max_session_calls: 1_000_000,
            max_session_commands: None,
        }
    }
}

impl Validate for ShellLimits {
    /// A line needs time and memory to run at all; a count a person sets
    /// must let something run (to count nothing, the setting is left out).
    fn validate(&self) -> Vec<BadValue> {
        let counts = [
            ("max_commands", self.max_commands.map(|n| n as u64), "commands"),
            ("max_loop_iterations", self.max_loop_iterations.map(|n| n as u64), "iterations"),
            ("max_total_loop_iterations", self.max_total_loop_iterations.map(|n| n as u64), "iterations"),
            ("max_input_bytes", self.max_input_bytes, "bytes"),
            ("max_session_commands", self.max_session_commands, "commands"),
        ];
        let set = counts
            .into_iter()
            .filter_map(|(key, value, what)| at_least_one(key, value?, &format!("{what}; leave it out for no count")));
        [
            seconds("timeout_secs", self.timeout_secs, "of one line"),
            at_least_one("max_memory_bytes", self.max_memory_bytes as u64, "bytes; a line holds its own output"),
            at_least_one("max_session_calls", self.max_session_calls, "calls"),
            at_least_one(
                "max_workspace_growth_bytes",
                self.max_workspace_growth_bytes,
                "bytes of disk one line may take",
            ),
        ]
        .into_iter()
        .flatten()
        .chain(set)
        .collect()
    }
}

impl ShellLimits {
    /// The wall-time limit of one line.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    pub(crate) fn to_bashkit(&self) -> bashkit::ExecutionLimits {
        let memory = self.max_memory_bytes;
        bashkit::ExecutionLimits::new()
            .timeout(self.timeout())
            .max_commands(self.max_commands.unwrap_or(NO_COUNT))
            .max_loop_iterations(self.max_loop_iterations.unwrap_or(NO_COUNT))
            .max_total_loop_iterations(self.max_total_loop_iterations.unwrap_or(NO_COUNT))
            // bashkit charges both for every command's stdin whether it reads
            // it or not: a `while read` body's commands are each charged the
            // whole rest of the loop's input, so no fixed count is out of
            // reach there. Unset, they are off; time bounds the work.
            .max_aggregate_input_bytes(self.max_input_bytes.unwrap_or(u64::MAX))
            .max_work_units(u64::MAX)
            .max_live_intermediate_bytes(memory as u64)
            .max_stdout_bytes(memory)
            .max_stderr_bytes(memory)
            .max_builtin_output_bytes(memory)
            .max_word_split_bytes(memory)
            .max_word_split_fields(NO_COUNT)
            .max_brace_expansion(BRACE_ELEMENTS)
    }

    /// The in-memory files: bashkit's own bounds on counts and names, with
    /// the size set here.
    pub(crate) fn to_bashkit_fs(&self) -> bashkit::FsLimits {
        bashkit::FsLimits::new().max_total_bytes(self.max_tmp_bytes).max_file_size(self.max_tmp_bytes)
    }

    /// Variables and arrays: held in memory like the rest.
    pub(crate) fn to_bashkit_memory(&self) -> bashkit::MemoryLimits {
        bashkit::MemoryLimits::new().max_total_variable_bytes(self.max_memory_bytes).max_array_entries(NO_COUNT)
    }

    pub(crate) fn to_bashkit_session(&self) -> bashkit::SessionLimits {
        bashkit::SessionLimits::new()
            .max_exec_calls(self.max_session_calls)
            .max_total_commands(self.max_session_commands.unwrap_or(NO_COUNT as u64))
    }
}

/// Exit code of a line stopped by one of its limits (not the time limit):
/// never 0, whatever the last stage's status would have been.
pub(crate) const LIMIT_EXIT: i32 = clix_common::exit::FAILURE;

/// Which bound stopped a line, for [`stop_message`].
pub(crate) enum Stop {
    /// The memory a line may hold; what passed it ("find's output").
    Memory(String),
    /// The same, for output of a line that already ran whole in the
    /// sandbox's GNU tools, where running it there is no way out.
    Streamed(String),
    /// A count a person set in `[limits]`: its setting and value.
    Count(&'static str, String),
    /// A bound of the in-process shell would have given a shorter answer: what it was.
    Cut(String),
    /// Anything else bashkit stops at, in its own words.
    Other(String),
}

impl Stop {
    /// [`Stop::of`] for a line that ran whole in the sandbox's GNU tools.
    pub(crate) fn of_streamed(limit: &LimitExceeded) -> Stop {
        match Stop::of(limit) {
            Stop::Memory(what) => Stop::Streamed(what),
            other => other,
        }
    }

    pub(crate) fn of(limit: &LimitExceeded) -> Stop {
        use ExecutionBudgetExceeded as Budget;
        match limit {
            LimitExceeded::BuiltinOutput { command, .. } => Stop::Memory(format!("{command}'s output")),
            LimitExceeded::ExecutionBudget(Budget::LiveBytes { .. }) | LimitExceeded::Memory(_) => {
                Stop::Memory("the data the line holds".into())
            }
            LimitExceeded::ExecutionBudget(Budget::InputBytes { limit, .. }) => {
                Stop::Count("max_input_bytes", format!("{limit} bytes read"))
            }
            LimitExceeded::MaxCommands(n) => Stop::Count("max_commands", format!("{n} commands")),
            LimitExceeded::MaxLoopIterations(n) => Stop::Count("max_loop_iterations", format!("{n} iterations")),
            LimitExceeded::MaxTotalLoopIterations(n) => {
                Stop::Count("max_total_loop_iterations", format!("{n} iterations"))
            }
            LimitExceeded::SessionMaxCommands(n) => Stop::Count("max_session_commands", format!("{n} commands")),
            LimitExceeded::SessionMaxExecCalls(n) => Stop::Count("max_session_calls", format!("{n} calls")),
            LimitExceeded::Cut(what) => Stop::Cut(what.clone()),
            other => Stop::Other(other.to_string()),
        }
    }
}

/// The one `[error]` line of a line stopped by a limit: which limit, its
/// value, the setting that raises it, and another way to do the job.
pub(crate) fn stop_message(stop: &Stop, limits: &ShellLimits) -> String {
    match stop {
        Stop::Memory(what) => format!(
            "[error] stopped: {what} passed the memory one line may hold ({}, [limits] max_memory_bytes). \
             Raise the limit, or run the line in the sandbox's GNU bash, which streams: sandbox bash '<line>'\n",
            binary_size(limits.max_memory_bytes)
        ),
        Stop::Streamed(what) => format!(
            "[error] stopped: {what} passed the memory one line may hold ({}, [limits] max_memory_bytes), \
             though the line already ran in the sandbox's GNU tools. Raise the limit, or have GNU bash write \
             the output to a workspace file and read that in parts: sandbox bash '<line> > out.txt', then \
             head or grep out.txt\n",
            binary_size(limits.max_memory_bytes)
        ),
        Stop::Count(setting, value) => format!(
            "[error] stopped: the line reached its {value} ([limits] {setting}). Raise or remove {setting}, \
             or narrow the line (fewer files, smaller loops)\n"
        ),
        Stop::Cut(what) => format!(
            "[error] stopped: {what} (the in-process shell holds 10 MiB in one expansion, {BRACE_ELEMENTS} \
             words in a brace expansion, a 1 MiB block of an endless device), so the line stopped rather than \
             answer short. Run it in the sandbox's GNU bash, which streams: sandbox bash '<line>'\n"
        ),
        Stop::Other(what) => {
            format!(
                "[error] stopped: {what}. Narrow the line, or run it in the sandbox's GNU bash: sandbox bash '<line>'\n"
            )
        }
    }
}

/// `1 GiB`, `512 MiB`, `64 KiB`, `100 bytes`: a limit as a person set it.
fn binary_size(bytes: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match UNITS.iter().find(|(unit, _)| bytes >= *unit) {
        Some((unit, name)) if bytes.is_multiple_of(*unit) => format!("{} {name}", bytes / unit),
        Some((unit, name)) => format!("{:.1} {name}", bytes as f64 / *unit as f64),
        None => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (the limits, every value refused) — and the defaults are allowed.
    #[test]
    fn values_a_line_cannot_run_with_are_refused() {
        let d = ShellLimits::default;
        let cases = [
            (d(), vec![]),
            (
                ShellLimits { timeout_secs: 0, ..d() },
                vec!["timeout_secs = 0: from 1 to 31536000 (seconds of one line;"],
            ),
            (ShellLimits { timeout_secs: u64::MAX, ..d() }, vec!["timeout_secs = 18446744073709551615: from 1 to"]),
            (ShellLimits { max_memory_bytes: 0, ..d() }, vec!["max_memory_bytes = 0: at least 1 (bytes;"]),
            (ShellLimits { max_tmp_bytes: 0, ..d() }, vec![]),
            (
                ShellLimits { max_commands: Some(0), max_input_bytes: Some(0), max_session_calls: 0, ..d() },
                vec![
                    "max_session_calls = 0: at least 1 (calls)",
                    "max_commands = 0: at least 1 (commands; leave it out for no count)",
                    "max_input_bytes = 0: at least 1 (bytes; leave it out for no count)",
                ],
            ),
            (ShellLimits { max_loop_iterations: Some(1), ..d() }, vec![]),
        ];
        for (limits, want) in cases {
            let got: Vec<String> = limits.validate().iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (got, want) in got.iter().zip(&want) {
                assert!(got.starts_with(want), "{got} / {want}");
            }
        }
    }

    #[test]
    fn sizes_read_as_a_person_wrote_them() {
        for (bytes, shown) in
            [(1 << 30, "1 GiB"), (512 << 20, "512 MiB"), (65536, "64 KiB"), (1536, "1.5 KiB"), (100, "100 bytes")]
        {
            assert_eq!(binary_size(bytes), shown);
        }
    }
}
