//! Interpreter for executing bash scripts
//!
//! # Fail Points (enabled with `failpoints` feature)
//!
//! - `interp::execute_command` - Inject failures in command execution
//! - `interp::expand_variable` - Inject failures in variable expansion
//! - `interp::execute_function` - Inject failures in function calls

// Interpreter uses chars().last().unwrap() and chars().next().unwrap() after
// validating string contents. This is safe because we check for non-empty strings.
#![allow(clippy::unwrap_used)]

// Decision: builtin array mutations use the same retained entry/byte accounting
// as assignments. Clearing refunds both charges; indexed merges check each live
// element in place. Refused entry/byte writes fail the host execution visibly.

// Decision: function definition filenames share Arc<str> storage and live in
// ScopedState beside functions. Charge filename/key bytes per function before
// admission; replace/refund them with the definition so forks, rollback and
// unset cannot orphan metadata or bypass the retained-function byte limit.

// Decision: shell diagnostics carry bash's non-interactive prefix
// `$0: line N: ` (`$0` is BASH_SOURCE[0] when a file is being read, so a
// sourced file names itself), built by `Interpreter::diag_prefix`. Every
// interpreter-generated message uses it. Bundled builtins have no
// interpreter handle, so they keep writing `bash: name: msg` (or bare
// `name: msg` for bash shell builtins) and `prefix_builtin_diagnostics`
// rewrites the line start at the single dispatch point
// (`execute_builtin_arc`), before redirects or streaming see the text.
// Diagnostic names are capped at 1,024 UTF-8 bytes without changing `$0`.
// Rewriting leases both bytes and cached text before fallible allocation;
// leases survive routing, and each scan/emission checks the request budget.
// Execution plans and `/dev/stderr` operand data are not rewritten; usage
// lines (`name: usage:`) and coreutils-style builtins (cat, grep, ...:
// external programs in bash) stay unprefixed. Interactive shells
// (`set_interactive`) print `$0: msg` with no line, like `bash -i`. The
// sandbox "Did you mean" / unavailable-command hints after
// `command not found` are kept on purpose.

// Decision: trap handlers share the function/source depth budget plus a
// dedicated trap-nesting cap. Nested delivery skips an exhausted handler
// with a diagnostic; handler logic failures never disturb the interrupted
// command (TM-DOS-030), while the first resource-limit trip fails the exec.
mod arithmetic;
mod brace_expansion;
mod completion;
mod coproc;
mod declare;
mod expansion;
mod glob;
mod history;
mod jobs;
pub(crate) mod pipe;
mod pipeline_admission;
mod pipeline_log;
mod prompt;
mod readline_bind;
mod readline_defaults;
mod redirection;
mod state;
mod time_command;
mod xtrace;

#[allow(unused_imports)]
pub use jobs::{JobInfo, JobState, JobTable, SharedJobTable};
pub use pipeline_log::{PipelineStage, PipelineStatus};
pub use state::{BuiltinSideEffect, ControlFlow, ExecResult};
use time_command::{
    TimeUsage, render_time_format, render_timeformat, sanitize_time_path, validate_time_format,
    verbose_time_report,
};
// Re-export snapshot type for public API

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

static TIME_REPORT_COUNTER: AtomicU64 = AtomicU64::new(0);

// Important decision: report a bash-compatible version surface instead of the
// bashkit crate semver so scripts that gate on Bash features keep working.
const COMPAT_BASH_VERSION: &str = "5.2.15(1)-release";
const COMPAT_BASH_VERSINFO: [&str; 6] = ["5", "2", "15", "1", "release", "virtual"];

// Important decision: operand quote sentinels must be selected from a small,
// parser-inert set. Exhaustive Unicode probing is attacker-amplifiable CPU work.
const OPERAND_QUOTE_MARK_CANDIDATES: &[char] = &[
    '\u{E000}', '\u{E001}', '\u{E002}', '\u{E003}', '\u{E004}', '\u{E005}', '\u{E006}', '\u{E007}',
    '\u{E008}', '\u{E009}', '\u{E00A}', '\u{E00B}', '\u{E00C}', '\u{E00D}', '\u{E00E}', '\u{E00F}',
    '\u{FDD0}', '\u{FDD1}', '\u{FDD2}', '\u{FDD3}', '\u{FDD4}', '\u{FDD5}', '\u{FDD6}', '\u{FDD7}',
    '\u{FDD8}', '\u{FDD9}', '\u{FDDA}', '\u{FDDB}', '\u{FDDC}', '\u{FDDD}', '\u{FDDE}', '\u{FDDF}',
];

use futures_util::FutureExt;

use crate::builtins::search_common::RuntimeRegexCache;
use crate::builtins::{self, Builtin};
#[cfg(feature = "failpoints")]
use crate::error::Error;
use crate::error::Result;
use crate::fs::FileSystem;
use crate::limits::{
    BudgetedString, ExecutionCounters, ExecutionLimits, HARD_MAX_TRAP_NESTING, LimitExceeded,
    SessionLimits,
};

/// A single command history entry.
#[derive(Debug, Clone)]
pub struct HistoryEntry {
    /// The command line as entered
    pub command: String,
    /// Unix timestamp when the command was executed
    pub timestamp: i64,
    /// Working directory at execution time
    pub cwd: String,
    /// Exit code of the command
    pub exit_code: i32,
    /// Duration in milliseconds
    pub duration_ms: u64,
}

impl HistoryEntry {
    fn retained_bytes(&self) -> usize {
        self.command.len().saturating_add(self.cwd.len())
    }
}

fn format_history_entries(entries: &[HistoryEntry]) -> String {
    let mut content = String::new();
    for entry in entries {
        use std::fmt::Write;
        let _ = writeln!(
            content,
            "{}|{}|{}|{}|{}",
            entry.timestamp, entry.exit_code, entry.duration_ms, entry.cwd, entry.command
        );
    }
    content
}

/// Shell language features that reach beyond in-memory computation.
///
/// All are enabled by default. Turning them off (with
/// [`crate::BashBuilder::shell_features`], usually together with
/// [`crate::BashBuilder::builtin_filter`] and a rejecting
/// [`crate::FileSystem`]) is how embedders build restricted shells, such as
/// the shell `ScriptedTool` runs scripts in. Decision: core knows the
/// switches, not any named restricted mode; modes are assembled by callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellFeatures {
    file_redirects: bool,
    process_substitution: bool,
    script_execution: bool,
}

impl Default for ShellFeatures {
    fn default() -> Self {
        Self::all()
    }
}

impl ShellFeatures {
    /// Every feature enabled (the default full shell).
    pub const fn all() -> Self {
        Self {
            file_redirects: true,
            process_substitution: true,
            script_execution: true,
        }
    }

    /// Every feature disabled.
    pub const fn none() -> Self {
        Self {
            file_redirects: false,
            process_substitution: false,
            script_execution: false,
        }
    }

    /// File redirects (`<`, `>`, `>>`, `&>`, `>|`, `$(<file)`, `time -o`).
    /// `/dev/null` targets keep working when disabled.
    pub const fn file_redirects(mut self, enabled: bool) -> Self {
        self.file_redirects = enabled;
        self
    }

    /// Process substitution (`<(cmd)`, `>(cmd)`).
    pub const fn process_substitution(mut self, enabled: bool) -> Self {
        self.process_substitution = enabled;
        self
    }

    /// Running scripts from the filesystem or as nested shells: path
    /// execution (`./x.sh`), `$PATH` lookup, `source`/`.`, `exec`, `bash`,
    /// and `sh`.
    pub const fn script_execution(mut self, enabled: bool) -> Self {
        self.script_execution = enabled;
        self
    }

    /// Whether file redirects are enabled.
    pub const fn has_file_redirects(self) -> bool {
        self.file_redirects
    }

    /// Whether process substitution is enabled.
    pub const fn has_process_substitution(self) -> bool {
        self.process_substitution
    }

    /// Whether script execution is enabled.
    pub const fn has_script_execution(self) -> bool {
        self.script_execution
    }
}

/// Predicate selecting which default builtins a shell registers.
pub(crate) type BuiltinFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// clix patch ("--help for every command"): the host's answer to
/// `NAME --help` (see [`crate::Bash::set_flag_help`]).
pub type FlagHelp = Arc<
    dyn Fn(String) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>>
        + Send
        + Sync,
>;

/// Best-effort source text of a command, for `jobs` and `ps`.
fn describe_command(cmd: &Command) -> String {
    match cmd {
        Command::Simple(c) => std::iter::once(&c.name)
            .chain(c.args.iter())
            .map(|w| w.to_string())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        Command::Pipeline(p) => p
            .commands
            .iter()
            .map(describe_command)
            .collect::<Vec<_>>()
            .join(" | "),
        Command::List(l) => describe_command(&l.first),
        Command::Compound(..) => "(...)".to_string(),
        Command::Function(f) => format!("{} ()", f.name),
    }
}

fn word_literal_text(word: &Word) -> Option<&str> {
    if word.parts.len() == 1
        && let WordPart::Literal(s) = &word.parts[0]
    {
        return Some(s);
    }
    None
}

fn word_has_process_substitution(word: &Word) -> bool {
    word.parts
        .iter()
        .any(|part| matches!(part, WordPart::ProcessSubstitution { .. }))
}

fn word_is_literal_dev_null(word: &Word) -> bool {
    word_literal_text(word) == Some(DEV_NULL)
}

fn redirect_target_label(word: &Word) -> String {
    word_literal_text(word)
        .map(ToOwned::to_owned)
        .unwrap_or_else(|| word.to_string())
}

fn compat_bash_versinfo_array() -> HashMap<usize, String> {
    COMPAT_BASH_VERSINFO
        .iter()
        .enumerate()
        .map(|(idx, value)| (idx, (*value).to_string()))
        .collect()
}

/// Callback for streaming output chunks as they are produced.
///
/// Arguments: `(stdout_chunk, stderr_chunk)`. Called after each loop iteration
/// and each top-level command completes. Only non-empty chunks trigger a call.
///
/// Requires `Send + Sync` because the interpreter holds this across `.await` points.
/// Closures capturing `Arc<Mutex<_>>` satisfy both bounds automatically.
pub type OutputCallback = Box<dyn FnMut(&crate::StreamData, &crate::StreamData) + Send + Sync>;
use crate::parser::{
    ArithmeticForCommand, Assignment, AssignmentValue, CaseCommand, Command, CommandList,
    CompoundCommand, CoprocCommand, ForCommand, FunctionDef, IfCommand, ListOperator, ParameterOp,
    Parser, Pipeline, Redirect, RedirectKind, Script, SelectCommand, SimpleCommand, Span,
    TimeCommand, UntilCommand, WhileCommand, Word, WordPart,
};

#[cfg(feature = "failpoints")]
use fail::fail_point;

/// The canonical /dev/null path.
/// This is handled at the interpreter level to prevent custom filesystems from bypassing it.
const DEV_NULL: &str = "/dev/null";
/// Default `$PATH`, matching the Debian-style layout `uname` reports.
pub(crate) const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Convert a [`SubCommand`](crate::builtins::SubCommand)'s command-scoped
/// `(VAR, value)` pairs into AST [`Assignment`]s, so a plan's inner command
/// runs with `VAR=value cmd ...` semantics (used by `xargs --process-slot-var`).
fn subcommand_env_assignments(pairs: &[(String, String)]) -> Vec<Assignment> {
    pairs
        .iter()
        .map(|(name, value)| Assignment {
            name: name.clone(),
            index: None,
            value: AssignmentValue::Scalar(Word::quoted_literal(value.clone())),
            append: false,
        })
        .collect()
}

/// Lower an [`ExecutionPlan`](builtins::ExecutionPlan) [`SubCommand`](builtins::SubCommand)
/// into an executable [`Command::Simple`], wiring any stdin through a here-string
/// redirect and command-scoped `VAR=value` assignments. Shared by the `Timeout`,
/// `Batch`, and `BatchWithStatus` plan arms.
fn subcommand_to_command(cmd: &builtins::SubCommand) -> Command {
    Command::Simple(SimpleCommand {
        name: Word::quoted_literal(cmd.name.clone()),
        args: cmd
            .args
            .iter()
            .map(|s| Word::quoted_literal(s.clone()))
            .collect(),
        redirects: Vec::new(),
        assignments: subcommand_env_assignments(&cmd.assignments),
        span: Span::new(),
    })
}

/// Check if a name is a shell keyword (for `command -v`/`command -V`).
fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "for"
            | "while"
            | "until"
            | "do"
            | "done"
            | "case"
            | "esac"
            | "in"
            | "function"
            | "select"
            | "time"
            | "{"
            | "}"
            | "[["
            | "]]"
            | "!"
    )
}

/// Borrowed reference to interpreter shell state for builtins.
///
/// Provides:
/// - **Direct mutable access** to aliases and traps (simple HashMaps, no invariants)
/// - **Read-only access** to functions, builtins, call stack, history, jobs
///
/// Design rationale: aliases and traps are directly mutable because they're
/// simple HashMap state with no invariants to enforce. Arrays use
/// [`BuiltinSideEffect`] because they need memory budget checking.
/// History uses side effects for VFS persistence.
///
/// All fields are disjoint from `Context`'s mutable borrows (variables, cwd),
/// enabling safe split borrowing in `dispatch_command`.
pub(crate) struct ShellRef<'a> {
    /// Direct mutable access to shell aliases. Backed by `Arc::make_mut` of
    /// the parent's Arc-wrapped aliases map.
    pub(crate) aliases: &'a mut HashMap<String, String>,
    /// Direct mutable access to trap handlers.
    pub(crate) traps: &'a mut HashMap<String, String>,
    /// Set while the ERR handler is inherited for display only (subshell
    /// without `set -E`); `trap` clears it when it sets or resets ERR.
    pub(crate) err_trap_dormant: &'a mut bool,
    /// Same for DEBUG in a subshell or `$(...)` without `set -T`.
    pub(crate) debug_trap_dormant: &'a mut bool,
    /// Variable attribute table (readonly/integer/lower/upper). Mutable so
    /// `readonly`/`declare`/`unset` builtins can update attributes without
    /// re-allocating `_READONLY_X`-style marker strings.
    pub(crate) var_attrs: &'a mut HashMap<String, VarAttrs>,
    /// Nameref bindings (`declare -n`). Mutable so `unset -n` can clear them.
    pub(crate) namerefs: &'a mut HashMap<String, String>,
    /// Directory stack for `pushd`/`popd`/`dirs`. Direct mutable access backed
    /// by `Arc::make_mut` of the parent's Arc-wrapped stack.
    pub(crate) dir_stack: &'a mut Vec<String>,
    /// Command hash table (`hash`, `type`'s "is hashed").
    pub(crate) command_hash: &'a mut builtins::CommandHash,
    /// Current budget, including direct interpreter and descendant execution.
    pub(crate) execution_budget: &'a crate::limits::ExecutionBudget,
    /// `test -v NAME` answers, worked out by the interpreter (which knows
    /// arrays, namerefs and dynamic variables) for each operand that follows
    /// a `-v` in a `test`/`[` call. Empty for every other builtin.
    pub(crate) set_vars: &'a [String],
    /// Registered builtin commands (read-only, accessed via `has_builtin`).
    pub(crate) builtins: &'a BuiltinMap,
    /// Host-owned builtin registry, when configured (read-only). Needed so
    /// introspection builtins (`compgen -b`) list host-registered commands
    /// alongside baked-in ones, matching `Bash::builtin_names()`.
    pub(crate) host_builtins: Option<&'a crate::builtins::BuiltinRegistry>,
    /// Defined shell functions (read-only, accessed via `has_function`).
    pub(crate) functions: &'a HashMap<String, FunctionDef>,
    /// Call stack frames (read-only, accessed via `call_stack_depth`/`call_stack_frame_name`).
    call_stack: &'a [CallFrame],
    /// Command history (read-only, accessed via `history_entries`).
    pub(crate) history: &'a [HistoryEntry],
    /// Execution limits used by read-only builtins to avoid unbounded formatting.
    limits: &'a ExecutionLimits,
    /// Shared job table (read-only, accessed via `jobs`).
    pub(crate) jobs: &'a SharedJobTable,
    /// Typed per-execution extensions for the current `exec*()` call.
    pub(crate) execution_extensions: Arc<builtins::ExecutionExtensions>,
    /// Stdout of a streaming pipeline stage (see `Context::stdout_stream`).
    pub(crate) stdout_pipe: Option<Arc<pipe::Pipe>>,
    /// Stdin of a streaming filter stage (see `Context::stdin_stream`).
    pub(crate) stdin_pipe: Option<Arc<pipe::Pipe>>,
    pub(crate) stderr_pipe: Option<Arc<pipe::Pipe>>,
    pub(crate) command_routes: Option<[crate::command::CommandRoute; 2]>,
    pub(crate) stdout_stream: Option<crate::command::CommandOutput>,
    /// Enclosing loops in the current function (`break`/`continue`).
    pub(crate) loop_depth: usize,
    /// Active function calls and `source`s (`return` is valid when > 0).
    pub(crate) return_depth: usize,
    /// `$?` when the builtin started (`return` without an argument).
    pub(crate) last_exit_code: i32,
}

// Interpreter-dispatched "special" builtins, listed here so the public
// inventory and special-builtin dispatch share one source of truth. Some names
// (e.g. `eval`, `local`, `unset`) are also in the registered builtin map, but
// the interpreter dispatches them ahead of it because they need parser/
// interpreter state; others (e.g. `bash`, `command`, `exec`, `getopts`) live
// only here. Listing every name guarantees inventory completeness regardless of
// map membership.
/// Interpreter named by a script's `#!` line, with the arguments that go
/// before the script path. `None` for no shebang or a shell (`bash`/`sh`),
/// which run the content in-process.
///
/// Decision: `#!/path/NAME [ARG]` keeps Linux semantics (everything after
/// the interpreter is one argument); `#!/path/env [-S] NAME ARGS...` splits,
/// matching `env -S`. Only the basename picks the builtin, so the path in the
/// shebang never needs to exist in the VFS. The caller dispatches only to a
/// registered builtin that is a real program (not `cd`, `export`, ...).
fn shebang_interpreter(content: &str) -> Option<(String, Vec<String>)> {
    let line = content.strip_prefix("#!")?.lines().next()?.trim();
    let (interp, rest) = match line.split_once(char::is_whitespace) {
        Some((i, r)) => (i, r.trim()),
        None => (line, ""),
    };
    let base = interp.rsplit('/').next()?;
    let (cmd, argv): (&str, Vec<String>) = if base == "env" {
        let mut words = rest.split_whitespace();
        let mut cmd = words.next()?;
        if cmd == "-S" {
            cmd = words.next()?;
        }
        (cmd, words.map(str::to_string).collect())
    } else if rest.is_empty() {
        (base, Vec::new())
    } else {
        (base, vec![rest.to_string()])
    };
    if cmd.is_empty() || cmd.starts_with('-') || matches!(cmd, "bash" | "sh") {
        return None;
    }
    Some((cmd.to_string(), argv))
}

// Builtins that exist only inside a shell (no `/usr/bin` program of that
// name), so `env NAME` cannot run them.
const ENV_SHELL_ONLY_BUILTINS: &[&str] = &[
    ".",
    "alias",
    "bg",
    "break",
    "builtin",
    "caller",
    "cd",
    "compgen",
    "continue",
    "declare",
    "dirs",
    "disown",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "let",
    "local",
    "mapfile",
    "popd",
    "pushd",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "times",
    "trap",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// Invocation-only settings `parse_shell_args` reports among the shell
/// options. The NUL prefix keeps them from ever naming a variable.
const SHELL_ARG_INTERACTIVE: &str = "\0i";
const SHELL_ARG_NORC: &str = "\0norc";
const SHELL_ARG_RCFILE: &str = "\0rcfile";

/// `bash -i`, `--norc`, `--rcfile FILE`, taken out of the shell options.
#[derive(Default)]
struct ShellInvocation {
    interactive: bool,
    norc: bool,
    rcfile: Option<String>,
}

impl ShellInvocation {
    fn take_from(opts: &mut Vec<(String, String)>) -> Self {
        let mut inv = Self::default();
        opts.retain(|(name, value)| match name.as_str() {
            SHELL_ARG_INTERACTIVE => {
                inv.interactive = value == "1";
                false
            }
            SHELL_ARG_NORC => {
                inv.norc = true;
                false
            }
            SHELL_ARG_RCFILE => {
                inv.rcfile = Some(value.clone());
                false
            }
            _ => true,
        });
        inv
    }
}

/// Nested `bash`/`sh` cap (TM-DOS-125). Sized so the deepest nesting fits a
/// 2 MiB debug-build stack with room for functions inside each level.
const MAX_CHILD_SHELL_DEPTH: usize = 8;

const SPECIAL_BUILTIN_NAMES: &[&str] = &[
    ".", "bash", "builtin", "command", "declare", "eval", "exec", "export", "getopts", "let",
    "local", "readonly", "sh", "source", "typeset", "unset",
];

/// Bash builtins the interpreter runs itself although they also have an
/// entry in the builtin map (which `builtin_filter` can remove).
const INTERPRETER_SHELL_BUILTINS: &[&str] =
    &["history", "fc", "compgen", "complete", "compopt", "bind"];

/// Interpreter-dispatched names that real bash reports as shell builtins
/// (`type builtin`, `command -V let`) although they have no entry in the
/// builtin map. `bash`/`sh` are programs in real bash, not builtins.
fn is_dispatch_only_builtin(name: &str) -> bool {
    SPECIAL_BUILTIN_NAMES.contains(&name) && !matches!(name, "bash" | "sh")
}

/// Sorted, deduped union of baked-in/custom builtins, interpreter-special
/// builtins, and the host registry.
fn merged_builtin_names(
    builtins: &BuiltinMap,
    host_builtins: Option<&crate::builtins::BuiltinRegistry>,
) -> Vec<String> {
    let mut names: Vec<String> = builtins.keys().cloned().collect();
    names.extend(SPECIAL_BUILTIN_NAMES.iter().map(|name| (*name).to_string()));
    if let Some(reg) = host_builtins {
        names.extend(reg.names());
    }
    names.sort();
    names.dedup();
    names
}

impl ShellRef<'_> {
    /// Get execution limits visible to read-only builtins.
    pub(crate) fn limits(&self) -> &ExecutionLimits {
        self.limits
    }

    /// Check if a name is a registered builtin command.
    pub(crate) fn has_builtin(&self, name: &str) -> bool {
        self.builtins.contains_key(name) || is_dispatch_only_builtin(name)
    }

    /// Sorted names of all dispatchable builtins (registered + special + host
    /// registry) — same contract as [`crate::Bash::builtin_names`].
    pub(crate) fn builtin_names(&self) -> Vec<String> {
        merged_builtin_names(self.builtins, self.host_builtins)
    }

    /// Check if a name is a defined shell function.
    pub(crate) fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(name)
    }

    /// A function's definition as bash prints it (`type`, `declare -f`).
    pub(crate) fn function_text(&self, name: &str) -> Option<String> {
        self.functions
            .get(name)
            .map(|f| crate::parser::function_string(name, &f.body))
    }

    /// Check if a name is a shell keyword.
    pub(crate) fn is_keyword(&self, name: &str) -> bool {
        is_keyword(name)
    }

    /// Get call stack depth (number of active function frames).
    pub(crate) fn call_stack_depth(&self) -> usize {
        self.call_stack.len()
    }

    /// Get function name at a given frame index (0 = most recent).
    pub(crate) fn call_stack_frame_name(&self, idx: usize) -> Option<&str> {
        if self.call_stack.is_empty() {
            return None;
        }
        // idx 0 = most recent frame (last in vec)
        let vec_idx = self.call_stack.len().checked_sub(1 + idx)?;
        Some(self.call_stack[vec_idx].name.as_str())
    }

    /// Get command history entries.
    pub(crate) fn history_entries(&self) -> &[HistoryEntry] {
        self.history
    }

    /// Get the shared job table for wait operations.
    pub(crate) fn jobs(&self) -> &SharedJobTable {
        self.jobs
    }

    /// Check if a variable is marked readonly via the attribute table.
    pub(crate) fn is_var_readonly(&self, name: &str) -> bool {
        self.var_attrs
            .get(name)
            .copied()
            .unwrap_or_default()
            .contains(VarAttrs::READONLY)
    }

    /// Mark a variable as readonly. The ShellRef already holds a `&mut HashMap`
    /// borrowed via `Arc::make_mut` from the interpreter, so this touches the
    /// HashMap directly with no extra refcount work.
    pub(crate) fn mark_var_readonly(&mut self, name: &str) {
        let entry = self.var_attrs.entry(name.to_string()).or_default();
        entry.insert(VarAttrs::READONLY);
    }

    /// Iterator over names of variables currently marked readonly. Used by
    /// `readonly -p` to render the marker list without scanning `variables`
    /// for legacy `_READONLY_X` prefixes.
    pub(crate) fn readonly_names(&self) -> impl Iterator<Item = &str> {
        self.var_attrs
            .iter()
            .filter(|(_, attrs)| attrs.contains(VarAttrs::READONLY))
            .map(|(name, _)| name.as_str())
    }
}

pub(crate) struct ExecutionExtensionsGuard {
    slot: Arc<StdMutex<Arc<builtins::ExecutionExtensions>>>,
    previous: Option<Arc<builtins::ExecutionExtensions>>,
    scope: Arc<crate::execution_capability::ExecutionScope>,
}

impl ExecutionExtensionsGuard {
    fn cleanup(&mut self) -> crate::CapabilityCleanupReport {
        // Deny all new capability access before restoring the interpreter's
        // previous request slot; this closes the cross-request handoff window.
        let _ = self.scope.begin_revoke();
        let mut failures = 0;
        if let Some(previous) = self.previous.take() {
            match self.slot.lock() {
                Ok(mut slot) => *slot = previous,
                Err(poisoned) => {
                    failures = 1;
                    *poisoned.into_inner() = previous;
                }
            }
        }
        self.scope.finish_revoke(failures)
    }

    pub(crate) fn finish(mut self) -> crate::CapabilityCleanupReport {
        self.cleanup()
    }
}

impl Drop for ExecutionExtensionsGuard {
    fn drop(&mut self) {
        let _ = self.cleanup();
    }
}

/// Subshell depth above which pipelines run their stages one after another.
///
/// THREAT[TM-DOS-124]: every concurrent level polls the next one from inside
/// its own poll, so nesting costs extra native stack (~25 KB per level in
/// debug builds). Past this depth (`f() { f | f; }`) stages fall back to running in
/// sequence, which recurses no deeper than a plain function call.
const MAX_STREAMING_NESTING: usize = 4;

/// Append a stage's stderr to the pipeline's, within `max` bytes.
fn append_stage_stderr(
    acc: &mut crate::StreamData,
    truncated: &mut bool,
    result: &ExecResult,
    max: usize,
) {
    if *truncated {
        return;
    }
    let remaining = max.saturating_sub(acc.len());
    if result.stderr.len() <= remaining {
        acc.append(&result.stderr);
        *truncated = result.stderr_truncated;
    } else {
        acc.append(&result.stderr.prefix(remaining));
        *truncated = true;
    }
}

/// Whether an `N<file` redirect (N >= 1) also feeds the command's stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HighFdStdin {
    /// Any fd: a compound's body (`while read -u 3 l; ...; done 3<f`).
    Any,
    /// Only this fd: a simple `read -u N`.
    Fd(i32),
    /// No fd: any other simple command (`cat 3<f` reads its own stdin).
    Never,
}

/// The fd a simple `read -u N` reads, as an [`HighFdStdin`].
#[inline(never)]
fn simple_high_fd_stdin(name: &str, args: &[String]) -> HighFdStdin {
    if name != "read" {
        return HighFdStdin::Never;
    }
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let fd = if arg == "-u" {
            iter.next().map(String::as_str)
        } else {
            arg.strip_prefix("-u")
        };
        if let Some(fd) = fd.and_then(|f| f.parse::<i32>().ok()) {
            return HighFdStdin::Fd(fd);
        }
    }
    HighFdStdin::Never
}

/// How much of a streaming stdin a command needs before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdinDemand {
    /// Never reads stdin.
    Nothing,
    /// One line (`read`).
    Line,
    /// First N lines, then stops reading (`head -n N`).
    Lines(usize),
    /// First N bytes, then stops reading (`head -c N`).
    Bytes(usize),
    /// Everything up to end of input.
    All,
}

impl StdinDemand {
    /// Reads from `pipe` into `buf` until this demand is met; true at end of
    /// input. Line-wise demands leave the rest in the pipe.
    ///
    /// clix patch: lines are counted as they arrive; counting the whole
    /// buffer again after each line made `yes | head -n 500000` quadratic.
    pub(super) async fn read_from(self, pipe: &pipe::Pipe, buf: &mut Vec<u8>) -> bool {
        let mut lines = buf.iter().filter(|&&b| b == b'\n').count();
        while !self.satisfied_by(buf, lines) {
            let chunk = if matches!(self, StdinDemand::All | StdinDemand::Bytes(_)) {
                pipe.read_some().await
            } else {
                pipe.read_line_chunk().await
            };
            if chunk.is_empty() {
                return true;
            }
            lines += chunk.iter().filter(|&&b| b == b'\n').count();
            buf.extend_from_slice(&chunk);
        }
        false
    }

    /// Whether `buf`, holding `lines` newlines, is enough.
    fn satisfied_by(self, buf: &[u8], lines: usize) -> bool {
        match self {
            Self::Nothing => true,
            Self::Line => lines > 0,
            Self::Lines(n) => lines >= n,
            Self::Bytes(n) => buf.len() >= n,
            Self::All => false,
        }
    }
}

fn stdin_demand(name: &str, args: &[String]) -> StdinDemand {
    match name {
        "echo" | "printf" | "true" | "false" | ":" | "exit" | "return" | "break" | "continue"
        | "sleep" | "test" | "[" | "cd" | "export" | "local" | "declare" | "set" | "unset"
        | "shift" | "" => StdinDemand::Nothing,
        "read"
            if !args
                .iter()
                .any(|a| a.starts_with('-') && (a.contains('d') || a.contains('N'))) =>
        {
            StdinDemand::Line
        }
        "head" => head_demand(args),
        _ => StdinDemand::All,
    }
}

/// `head [-n N | -c N | -N]` with no file operands; anything else reads all.
fn head_demand(args: &[String]) -> StdinDemand {
    let mut demand = StdinDemand::Lines(10);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (lines, value) = match arg.as_str() {
            "-n" | "--lines" => (true, it.next().map(String::as_str)),
            "-c" | "--bytes" => (false, it.next().map(String::as_str)),
            "-q" | "-v" | "--quiet" | "--silent" | "--verbose" => continue,
            a if a.starts_with("--lines=") => (true, Some(&a[8..])),
            a if a.starts_with("--bytes=") => (false, Some(&a[8..])),
            a if a.starts_with("-n") => (true, Some(&a[2..])),
            a if a.starts_with("-c") => (false, Some(&a[2..])),
            a if a.len() > 1
                && a.starts_with('-')
                && a[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                (true, Some(&a[1..]))
            }
            _ => return StdinDemand::All,
        };
        let Some(n) = value.and_then(|v| v.parse::<usize>().ok()) else {
            return StdinDemand::All;
        };
        demand = if lines {
            StdinDemand::Lines(n)
        } else {
            StdinDemand::Bytes(n)
        };
    }
    demand
}

#[cfg(test)]
mod execution_extensions_guard_tests {
    use super::*;

    #[test]
    fn poisoned_cleanup_is_recovered_bounded_and_idempotent() {
        let scope = crate::execution_capability::ExecutionScope::new();
        let mut active = builtins::ExecutionExtensions::new().with("secret".to_string());
        active.bind(scope.clone());
        let capability = active.get::<String>().unwrap();
        let previous = Arc::new(builtins::ExecutionExtensions::new());
        let slot = Arc::new(StdMutex::new(Arc::new(active)));

        let poison_slot = slot.clone();
        let _ = std::panic::catch_unwind(move || {
            let _guard = poison_slot.lock().unwrap();
            panic!("poison execution extension cleanup lock");
        });

        let guard = ExecutionExtensionsGuard {
            slot,
            previous: Some(previous),
            scope: scope.clone(),
        };
        let report = guard.finish();
        assert_eq!(report.failures, 1);
        assert!(report.revoked);
        assert_eq!(
            capability.try_with(Clone::clone),
            Err(crate::ExecutionCapabilityError::Revoked)
        );
        assert_eq!(scope.revoke(0), report, "second cleanup is idempotent");
    }
}

/// Levenshtein edit distance between two strings.
fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let n = b.len();
    let mut prev = (0..=n).collect::<Vec<_>>();
    let mut curr = vec![0; n + 1];
    for (i, ca) in a.iter().enumerate() {
        curr[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = if ca == cb { 0 } else { 1 };
            curr[j + 1] = (prev[j + 1] + 1).min(curr[j] + 1).min(prev[j] + cost);
        }
        std::mem::swap(&mut prev, &mut curr);
    }
    prev[n]
}

/// Hint for common commands that are unavailable in the sandbox.
fn unavailable_command_hint(name: &str) -> Option<&'static str> {
    match name {
        "pip" | "pip3" | "pip2" => Some("Package managers are not available in the sandbox."),
        "apt" | "apt-get" | "yum" | "dnf" | "pacman" | "brew" | "apk" => {
            Some("Package managers are not available in the sandbox.")
        }
        "npm" | "yarn" | "pnpm" | "bun" => {
            Some("Package managers are not available in the sandbox.")
        }
        "su" | "doas" => Some("All commands run without privilege restrictions."),
        #[cfg(not(feature = "ssh"))]
        "ssh" | "scp" | "sftp" => {
            Some("SSH requires the 'ssh' feature. Enable with: features = [\"ssh\"]")
        }
        "rsync" => Some("Network access is limited to curl/wget."),
        "docker" | "podman" | "kubectl" | "systemctl" | "service" => {
            Some("Container and service management is not available in the sandbox.")
        }
        "cmake" | "gcc" | "g++" | "clang" | "rustc" | "cargo" | "go" | "javac" | "node" => {
            Some("Compilers and build tools are not available in the sandbox.")
        }
        "vi" | "vim" | "nano" | "emacs" => {
            Some("Interactive editors are not available. Use echo/printf/cat to write files.")
        }
        "info" => Some("Info pages are not available; try `man CMD` or `CMD --help`."),
        _ => None,
    }
}

/// Build a "command not found" error with optional suggestions.
///
/// The message is newline-terminated: it goes straight into stderr, and real
/// bash ends every diagnostic with a newline. Without it consecutive failures
/// run together on one line (`...command not foundbash: next: ...`).
fn command_not_found_message(prefix: &str, name: &str, known_commands: &[&str]) -> String {
    let mut msg = format!("{prefix}{name}: command not found");

    // Check for unavailable command hints first
    if let Some(hint) = unavailable_command_hint(name) {
        msg.push_str(&format!(". {}", hint));
        msg.push('\n');
        return msg;
    }

    // Find close matches via Levenshtein distance
    let max_dist = if name.len() <= 3 { 1 } else { 2 };
    let mut suggestions: Vec<(&str, usize)> = known_commands
        .iter()
        .filter_map(|cmd| {
            let d = levenshtein(name, cmd);
            if d > 0 && d <= max_dist {
                Some((*cmd, d))
            } else {
                None
            }
        })
        .collect();
    suggestions.sort_unstable_by(|(left_name, left_dist), (right_name, right_dist)| {
        left_dist
            .cmp(right_dist)
            .then_with(|| left_name.cmp(right_name))
    });
    suggestions.truncate(3);

    if !suggestions.is_empty() {
        let names: Vec<&str> = suggestions.iter().map(|(s, _)| *s).collect();
        msg.push_str(&format!(". Did you mean: {}?", names.join(", ")));
    }

    msg.push('\n');
    msg
}

/// Decode a script/source file at the shell's unavoidable text boundary.
fn decode_file_bytes_for_path(_path: &Path, bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Child-shell counterpart of `recover_partial_parse` in `lib.rs`: commands
/// before a syntax error run, then the error is reported (exit 2). `bash -n`
/// keeps whole-script rejection since it only checks syntax.
fn nested_partial_parse(
    (mut script, error): (Script, Option<crate::error::Error>),
    noexec: bool,
    who: &str,
    source: &str,
) -> Result<Script> {
    match error {
        None => Ok(script),
        Some(e) if noexec || script.commands.is_empty() => Err(e),
        Some(e) => {
            script.trailing_error = Some(nested_syntax_report(&e, who, source));
            Ok(script)
        }
    }
}

/// A child shell's syntax error as bash reports it (`bash: -c: line 1: ...`).
fn nested_syntax_report(e: &crate::error::Error, who: &str, source: &str) -> String {
    e.syntax_report(who, source)
        .unwrap_or_else(|| format!("{who}: syntax error: {e}\n"))
}

/// Check if a path refers to /dev/null after normalization.
/// Handles attempts to bypass via paths like `/dev/../dev/null`.
fn is_dev_null(path: &Path) -> bool {
    normalize_dev_path(path) == Path::new(DEV_NULL)
}

/// File descriptor aliased by `/dev/stdin`, `/dev/stdout`, `/dev/stderr` or
/// `/dev/fd/N` (after `..` normalization), as on Linux.
///
/// Decision: these paths are resolved at the interpreter level like
/// `/dev/null`, never through the VFS. Writing them as regular files silently
/// swallowed `echo err > /dev/stderr`, a pattern agents use constantly.
/// The script a body runs (see `Interpreter::reread_script_rest`).
enum ScriptView<'a> {
    Parsed(&'a Script),
    Reread(Box<Script>),
}

impl ScriptView<'_> {
    fn get(&self) -> &Script {
        match self {
            ScriptView::Parsed(s) => s,
            ScriptView::Reread(s) => s,
        }
    }
}

fn dev_fd_alias(path: &Path) -> Option<i32> {
    let normalized = normalize_dev_path(path);
    match normalized.to_str()? {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        other => {
            let n = other.strip_prefix("/dev/fd/")?;
            if n.is_empty() || n.len() > 9 || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            n.parse().ok()
        }
    }
}

fn normalize_dev_path(path: &Path) -> PathBuf {
    // Normalize the path to handle .. and . components
    let mut normalized = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::RootDir => normalized.push("/"),
            std::path::Component::Normal(name) => normalized.push(name),
            std::path::Component::ParentDir => {
                normalized.pop();
            }
            std::path::Component::CurDir => {}
            std::path::Component::Prefix(_) => {}
        }
    }
    if normalized.as_os_str().is_empty() {
        normalized.push("/");
    }
    normalized
}

/// THREAT[TM-INJ-009,TM-INJ-016]: Check if a variable name is an internal marker.
/// Used by builtins and interpreter to block user assignment to internal prefixes.
/// Note: `_TTY_` is intentionally excluded — it is user-configurable (bashkit extension).
pub(crate) fn is_internal_variable(name: &str) -> bool {
    name.starts_with("SHOPT_")
        || name.starts_with("_NAMEREF_")
        || name.starts_with("_READONLY_")
        || name.starts_with("_UPPER_")
        || name.starts_with("_LOWER_")
        || name.starts_with("_INTEGER_")
        || name.starts_with("_ARRAY_READ_")
        || name == "_UMASK"
        || name.starts_with("_ULIMIT_")
        || name == "_SHIFT_COUNT"
        || name == "_SET_POSITIONAL"
}

/// THREAT[TM-INF-017]: Check if a variable should be hidden from user-visible output.
/// Superset of `is_internal_variable()` — also includes `_TTY_` which is user-settable
/// but should not appear in `set`, `declare -p`, or environment exports.
pub(crate) fn is_hidden_variable(name: &str) -> bool {
    is_internal_variable(name) || name.starts_with("_TTY_")
}

/// THREAT[TM-DOS-090]: Nameref targets are script-controlled. Only treat a
/// resolved target as an embedded array element when it is exactly `name[index]`;
/// malformed strings containing `[` must remain ordinary names, never sliced.
fn parse_embedded_array_ref(resolved_name: &str) -> Option<(&str, &str)> {
    let (arr_name, rest) = resolved_name.split_once('[')?;
    let idx_part = rest.strip_suffix(']')?;
    if !is_valid_var_name(arr_name) || idx_part.contains('[') || idx_part.contains(']') {
        return None;
    }
    Some((arr_name, idx_part))
}

/// Check if a string is a valid shell variable name: `[a-zA-Z_][a-zA-Z0-9_]*`.
///
/// Single canonical copy used by interpreter and builtins.
pub(crate) fn is_valid_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

// Important decision: locals use shallow binding, like bash. `local x`
// moves the caller-visible scalar binding (value, attributes, nameref, env
// entry) into the frame's `saved_vars` and the live maps then hold the local;
// popping the frame (or `unset` from a callee) puts the saved binding back.
// Lookups and builtins therefore only ever see the live maps, so `read`,
// `printf -v` and `declare -p` work on locals with no frame walk.

/// What a DEBUG handler left for the command it ran before: output not yet
/// streamed, and an `exit` from the handler.
#[derive(Default)]
struct DebugTrapOutput {
    stdout: crate::StreamData,
    stderr: crate::StreamData,
    exit: Option<i32>,
    /// The handler ran `return` inside a function: `exit` holds its
    /// status and the function returns instead of the shell exiting.
    returned: bool,
}

impl DebugTrapOutput {
    /// Output of a later handler run after this one's.
    fn absorb(&mut self, later: DebugTrapOutput) {
        self.stdout.append(&later.stdout);
        self.stderr.append(&later.stderr);
        if self.exit.is_none() {
            self.exit = later.exit;
            self.returned = later.returned;
        }
    }

    /// `result` with `debug`'s output (if any) ahead of its own.
    fn prepend_opt(debug: Option<Box<Self>>, result: Result<ExecResult>) -> Result<ExecResult> {
        match debug {
            Some(d) => result.map(|r| d.prepend_to(r)),
            None => result,
        }
    }

    /// The result to stop with when the handler ran `exit`.
    fn exit_result(debug: &mut Option<Box<Self>>) -> Option<ExecResult> {
        let code = debug.as_ref()?.exit?;
        debug.take().map(|d| d.into_exit_result(code))
    }

    /// The handler's output ahead of the command's own.
    fn prepend_to(self, mut result: ExecResult) -> ExecResult {
        if !self.stdout.is_empty() {
            result.stdout = self.stdout + &result.stdout;
        }
        if !self.stderr.is_empty() {
            result.stderr = self.stderr + &result.stderr;
        }
        result
    }

    /// The handler ran `exit` (or `return` in a function): the command
    /// does not run.
    fn into_exit_result(self, code: i32) -> ExecResult {
        ExecResult {
            stdout: self.stdout,
            stderr: self.stderr,
            exit_code: code,
            control_flow: if self.returned {
                ControlFlow::Return(code)
            } else {
                ControlFlow::Exit(code)
            },
            ..Default::default()
        }
    }
}

/// A caller binding saved by a `local` declaration (shallow binding).
#[derive(Debug, Clone, Default)]
struct SavedVar {
    value: Option<String>,
    attrs: Option<VarAttrs>,
    nameref: Option<String>,
    env: Option<String>,
}

/// One entry of bash's debug stack, the frames behind `BASH_SOURCE`,
/// `BASH_LINENO` and `FUNCNAME`: a function call (`funcname` is the
/// function, `file` where it was defined), a sourced file (`source`), or the
/// script file itself (`main`, line 0). `call_line` is the line the frame
/// was entered from.
#[derive(Debug, Clone)]
struct SourceFrame {
    file: Arc<str>,
    funcname: String,
    call_line: usize,
    is_function: bool,
}

impl SourceFrame {
    fn script(file: &str) -> Self {
        Self {
            file: Arc::from(file),
            funcname: "main".to_string(),
            call_line: 0,
            is_function: false,
        }
    }
}

/// A frame in the call stack for local variable scoping
#[derive(Debug, Clone)]
struct CallFrame {
    /// Function name
    name: String,
    /// Caller bindings shadowed by `local` in this frame, keyed by name.
    /// The keys are this frame's local variables.
    saved_vars: HashMap<String, SavedVar>,
    /// True for a shell function frame (where `local` is allowed).
    is_function: bool,
    /// Indexed arrays shadowed by local declarations in this scope.
    local_arrays: HashMap<String, Option<HashMap<usize, String>>>,
    /// Associative arrays shadowed by local declarations in this scope.
    local_assoc_arrays: HashMap<String, Option<HashMap<String, String>>>,
    /// Positional parameters ($1, $2, etc.)
    positional: Vec<String>,
    /// A function or `source` frame: `$0` comes from the nearest frame below
    /// it that is not (the script or shell), as in bash.
    keeps_arg0: bool,
}

/// A snapshot of shell state (variables, env, cwd, options).
///
/// Captures the serializable portions of the interpreter state.
/// Combined with [`VfsSnapshot`](crate::VfsSnapshot) this provides
/// full session snapshot/restore.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ShellState {
    /// Environment variables
    pub env: HashMap<String, String>,
    /// Shell variables
    pub variables: HashMap<String, String>,
    /// Variable attribute bitset per variable name.
    ///
    /// Serialized as raw bits for forward/backward compatibility.
    #[serde(default)]
    pub var_attrs: HashMap<String, u8>,
    /// Nameref bindings (`declare -n`): name -> target variable name.
    #[serde(default)]
    pub namerefs: HashMap<String, String>,
    /// Indexed arrays
    pub arrays: HashMap<String, HashMap<usize, String>>,
    /// Associative arrays
    pub assoc_arrays: HashMap<String, HashMap<String, String>>,
    /// Current working directory
    pub cwd: PathBuf,
    /// Last exit code
    pub last_exit_code: i32,
    /// PID/job id of the most recent background command, surfaced as `$!`.
    /// `Option` so older snapshots without the field deserialize cleanly.
    #[serde(default)]
    pub last_bg_pid: Option<String>,
    /// Defined shell functions
    #[serde(
        default,
        serialize_with = "serialize_snapshotted_functions",
        deserialize_with = "deserialize_snapshotted_functions"
    )]
    pub functions: HashMap<String, FunctionDef>,
    /// Shell aliases
    pub aliases: HashMap<String, String>,
    /// Trap handlers
    pub traps: HashMap<String, String>,
    /// Directory stack (`pushd`/`popd`/`dirs`); bottom-to-top, excluding `cwd`.
    #[serde(default)]
    pub dir_stack: Vec<String>,
}

/// Lightweight inspection view of shell state.
///
/// Omits AST-backed function definitions so prompt rendering and other UI-only
/// inspection paths don't pay to clone data they never expose or restore.
#[derive(Debug, Clone, Default)]
pub struct ShellStateView {
    /// Environment variables
    pub env: HashMap<String, String>,
    /// Shell variables
    pub variables: HashMap<String, String>,
    /// Indexed arrays
    pub arrays: HashMap<String, HashMap<usize, String>>,
    /// Associative arrays
    pub assoc_arrays: HashMap<String, HashMap<String, String>>,
    /// Current working directory
    pub cwd: PathBuf,
    /// Last exit code
    pub last_exit_code: i32,
    /// Shell aliases
    pub aliases: HashMap<String, String>,
    /// Trap handlers
    pub traps: HashMap<String, String>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct ShellStateOptions {
    pub(crate) include_functions: bool,
}

impl Default for ShellStateOptions {
    fn default() -> Self {
        Self {
            include_functions: true,
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshottedFunction {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ast: Option<FunctionDef>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum SnapshottedFunctionRepr {
    Snapshot(SnapshottedFunction),
    Legacy(FunctionDef),
}

fn serialize_snapshotted_functions<S>(
    functions: &HashMap<String, FunctionDef>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error>
where
    S: serde::Serializer,
{
    let snapshotted: HashMap<String, SnapshottedFunction> = functions
        .iter()
        .map(|(name, func)| {
            let mut ast = func.clone();
            ast.source = None;
            (
                name.clone(),
                SnapshottedFunction {
                    source: func.source.clone(),
                    ast: Some(ast),
                },
            )
        })
        .collect();
    serde::Serialize::serialize(&snapshotted, serializer)
}

fn deserialize_snapshotted_functions<'de, D>(
    deserializer: D,
) -> std::result::Result<HashMap<String, FunctionDef>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let snapshotted =
        <HashMap<String, SnapshottedFunctionRepr> as serde::Deserialize>::deserialize(
            deserializer,
        )?;
    snapshotted
        .into_iter()
        .map(|(name, repr)| {
            let func = match repr {
                SnapshottedFunctionRepr::Legacy(func) => func,
                SnapshottedFunctionRepr::Snapshot(snapshot) => {
                    match (snapshot.ast, snapshot.source) {
                        (Some(mut func), source) => {
                            if func.source.is_none() {
                                func.source = source;
                            }
                            func
                        }
                        (None, Some(source)) => deserialize_function_from_source(&name, &source)
                            .map_err(serde::de::Error::custom)?,
                        (None, None) => {
                            return Err(serde::de::Error::custom(format!(
                                "snapshot function '{name}' missing both ast and source"
                            )));
                        }
                    }
                }
            };
            if func.name != name {
                return Err(serde::de::Error::custom(format!(
                    "snapshot function key '{name}' does not match parsed name '{}'",
                    func.name
                )));
            }
            Ok((name, func))
        })
        .collect()
}

fn deserialize_function_from_source_with_limits(
    name: &str,
    source: &str,
    max_ast_depth: usize,
    max_parser_operations: usize,
) -> std::result::Result<FunctionDef, String> {
    let script = Parser::with_limits(source, max_ast_depth, max_parser_operations)
        .parse()
        .map_err(|err| format!("failed to parse function '{name}' from source: {err}"))?;
    let mut commands = script.commands.into_iter();
    let command = commands.next().ok_or_else(|| {
        format!("failed to parse function '{name}' from source: missing function command")
    })?;
    if commands.next().is_some() {
        return Err(format!(
            "failed to parse function '{name}' from source: expected exactly one command"
        ));
    }
    match command {
        Command::Function(mut func) => {
            func.source = Some(source.to_string());
            Ok(func)
        }
        other => Err(format!(
            "failed to parse function '{name}' from source: expected function definition, got {other:?}"
        )),
    }
}

fn deserialize_function_from_source(
    name: &str,
    source: &str,
) -> std::result::Result<FunctionDef, String> {
    deserialize_function_from_source_with_limits(name, source, 100, 100_000)
}

fn function_storage_bytes(func: &FunctionDef) -> usize {
    func.source.as_ref().map_or_else(
        || func.span.end.offset.saturating_sub(func.span.start.offset),
        |source| source.len(),
    )
}

/// The builtins by name, looked up several times for every command run:
/// foldhash rather than SipHash, as the names come from the script's own
/// author, not from outside (clix patch, "a command's fixed costs").
pub(crate) type BuiltinMap = HashMap<String, Arc<dyn Builtin>, foldhash::fast::RandomState>;

// Important decision: variable attributes (readonly/integer/lower/upper) and
// namerefs are stored in dedicated maps rather than the `variables` HashMap with
// `_READONLY_X` / `_INTEGER_X` / `_LOWER_X` / `_UPPER_X` / `_NAMEREF_X` keys.
// The legacy format!()-based marker scheme allocated 4-5 Strings per assignment
// and per attribute read; the bitset/map approach removes those allocations
// from the hot path. `is_internal_variable` no longer needs to filter these
// prefixes because they never enter `variables` at runtime.
bitflags::bitflags! {
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub(crate) struct VarAttrs: u8 {
        const READONLY = 0b0000_0001;
        const INTEGER  = 0b0000_0010;
        const LOWER    = 0b0000_0100;
        const UPPER    = 0b0000_1000;
        const EXPORT   = 0b0001_0000;
        /// Declared (`declare x`, `declare -a x`) but never assigned.
        const NOVALUE  = 0b0010_0000;
    }
}

// Important decision: shell option flags (set -e, set -u, set -x, set -o
// pipefail, etc.) are cached in a bitfield in addition to the SHOPT_X entries
// in `variables`. Hot-path checks (errexit after every command, nounset on
// every $VAR, etc.) read the bitfield directly instead of doing a HashMap
// lookup + string compare. Writes go through `set_shopt_flag` which keeps
// the bitfield and the SHOPT_X variable in sync.
bitflags::bitflags! {
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub(crate) struct BashFlags: u16 {
        const ERREXIT      = 0b0000_0000_0000_0001; // set -e / SHOPT_e
        const XTRACE       = 0b0000_0000_0000_0010; // set -x / SHOPT_x
        const NOUNSET      = 0b0000_0000_0000_0100; // set -u / SHOPT_u
        const NOGLOB       = 0b0000_0000_0000_1000; // set -f / SHOPT_f
        const VERBOSE      = 0b0000_0000_0001_0000; // set -v / SHOPT_v
        const ALLEXPORT    = 0b0000_0000_0010_0000; // set -a / SHOPT_a
        const NOEXEC       = 0b0000_0000_0100_0000; // set -n / SHOPT_n
        const NOCLOBBER    = 0b0000_0000_1000_0000; // set -C / SHOPT_C
        const PIPEFAIL     = 0b0000_0001_0000_0000; // set -o pipefail / SHOPT_pipefail
        const EXPAND_ALIAS = 0b0000_0010_0000_0000; // shopt expand_aliases
        const KEYWORD      = 0b0000_0100_0000_0000; // set -k / SHOPT_k
        const ERRTRACE     = 0b0000_1000_0000_0000; // set -E / SHOPT_E
        const FUNCTRACE    = 0b0001_0000_0000_0000; // set -T / SHOPT_T
    }
}

impl BashFlags {
    /// Every cached option with the `SHOPT_*` variable that holds it: the
    /// one table both directions read.
    const BY_SHOPT_NAME: [(&'static str, Self); 13] = [
        ("SHOPT_e", Self::ERREXIT),
        ("SHOPT_x", Self::XTRACE),
        ("SHOPT_u", Self::NOUNSET),
        ("SHOPT_f", Self::NOGLOB),
        ("SHOPT_v", Self::VERBOSE),
        ("SHOPT_a", Self::ALLEXPORT),
        ("SHOPT_n", Self::NOEXEC),
        ("SHOPT_C", Self::NOCLOBBER),
        ("SHOPT_pipefail", Self::PIPEFAIL),
        ("SHOPT_expand_aliases", Self::EXPAND_ALIAS),
        ("SHOPT_k", Self::KEYWORD),
        ("SHOPT_E", Self::ERRTRACE),
        ("SHOPT_T", Self::FUNCTRACE),
    ];

    /// Map a shell option variable name to its flag bit (None if unknown).
    fn from_shopt_name(name: &str) -> Option<Self> {
        Self::BY_SHOPT_NAME
            .iter()
            .find(|(shopt, _)| *shopt == name)
            .map(|(_, bit)| *bit)
    }
}

/// CoW-snapshotted scoped shell state.
///
/// Groups the maps captured at every `$(...)` / arithmetic-substitution and
/// subshell boundary. Each field is `Arc<HashMap>`, so cloning this struct is
/// an O(1) refcount bump per field — a whole-state snapshot is one
/// `ScopedState::clone()`. Mutations go through the `*_mut` accessors on
/// [`Interpreter`], which `Arc::make_mut` (paying one deep clone only when a
/// snapshot is still live).
#[derive(Clone, Default)]
struct ScopedState {
    /// Shell variables.
    variables: Arc<HashMap<String, String>>,
    /// Variable attribute flags (readonly/integer/lower/upper/export), keyed by
    /// the *resolved* (post-nameref) variable name. Empty entry == no attrs.
    var_attrs: Arc<HashMap<String, VarAttrs>>,
    /// Nameref bindings (`declare -n`): name -> target variable name.
    namerefs: Arc<HashMap<String, String>>,
    /// Indexed arrays: name -> index -> value.
    arrays: Arc<HashMap<String, HashMap<usize, String>>>,
    /// Associative arrays (`declare -A`): name -> key -> value.
    assoc_arrays: Arc<HashMap<String, HashMap<String, String>>>,
    /// Defined shell functions.
    functions: Arc<HashMap<String, FunctionDef>>,
    /// Definition filenames share storage with source frames. Charge each
    /// function's filename and metadata key conservatively to the function
    /// byte budget, even when several definitions share the same allocation.
    /// Keep this scoped so forks and rollback follow the function lifecycle.
    function_files: Arc<HashMap<String, Arc<str>>>,
    /// Trap handlers: signal/event name -> command string.
    traps: Arc<HashMap<String, String>>,
    /// Shell aliases: name -> expansion value.
    aliases: Arc<HashMap<String, String>>,
    /// Directory stack for `pushd`/`popd`/`dirs`. Index 0 is the bottom of the
    /// stack; the top (most recently pushed) is last. The current directory is
    /// `cwd`, not part of this vec. Previously stored as `_DIRSTACK_*` shell
    /// variables; now typed state so it can't be forged from a script.
    dir_stack: Arc<Vec<String>>,
    /// Command hash table: `$PATH` lookups remembered until `hash -r` or a
    /// `PATH` assignment. A subshell gets a copy.
    command_hash: Arc<builtins::CommandHash>,
}

/// All interpreter state mutated inside a `$(...)` / arithmetic substitution
/// subshell. Captured before the substitution runs and restored after, so
/// mutations don't leak to the parent. The [`ScopedState`] snapshot is O(1)
/// (per-field refcount bumps); only mutations inside the subshell pay a clone
/// (`Arc::make_mut`). For substitutions that don't mutate state at all (the
/// common case — `$(echo $x)`, command queries) this saves an entire deep
/// HashMap clone per substitution.
/// What `enter_output_region` changed, for `leave_output_region`.
struct OutputRegion {
    callback: Option<OutputCallback>,
    merge: bool,
}

/// Results gathered while a pipeline runs (see `execute_pipeline`).
#[derive(Default)]
struct PipelineAcc {
    /// `merge_stderr` outside the pipeline: off inside a multi-stage one,
    /// whose stages' stdout feeds a pipe.
    merge: bool,
    statuses: Vec<i32>,
    stderr: crate::StreamData,
    stderr_truncated: bool,
    last: ExecResult,
}

/// Subshell state a pipeline stage rolls back.
type StageSnapshot = (
    SubshellSnapshot,
    Vec<CallFrame>,
    HashMap<i32, coproc::InputFd>,
);

/// State held across one pipeline stage (see `enter_pipeline_stage`).
struct PipelineStageScope {
    saved: Option<StageSnapshot>,
    prev_pipeline_stdin: Option<Option<crate::StreamData>>,
}

// A suspended final stage can be cancelled before exit_pipeline_stage runs.
// Its subshell snapshot must still roll back, including session-owned leases.
struct PipelineStageGuard {
    interpreter: *mut Interpreter,
    scope: Option<PipelineStageScope>,
}

// SAFETY: the guard never leaves the future borrowing this interpreter. The
// interpreter is Send, and its borrowed address stays stable until guard drop.
unsafe impl Send for PipelineStageGuard {}

impl PipelineStageGuard {
    fn new(interpreter: &mut Interpreter, scope: PipelineStageScope) -> Self {
        Self {
            interpreter,
            scope: Some(scope),
        }
    }

    fn complete(
        mut self,
        interpreter: &mut Interpreter,
        result: Result<ExecResult>,
    ) -> Result<ExecResult> {
        debug_assert_eq!(self.interpreter, interpreter as *mut Interpreter);
        interpreter.exit_pipeline_stage(self.scope.take().expect("active pipeline scope"), result)
    }
}

impl Drop for PipelineStageGuard {
    fn drop(&mut self) {
        if let Some(scope) = self.scope.take() {
            // SAFETY: awaited command futures (which borrow the interpreter)
            // drop before this guard. No borrow remains during restoration.
            let _ = unsafe { &mut *self.interpreter }
                .exit_pipeline_stage(scope, Ok(ExecResult::default()));
        }
    }
}

struct SubshellSnapshot {
    scoped: ScopedState,
    env: Arc<HashMap<String, String>>,
    flags: BashFlags,
    cwd: PathBuf,
    memory_budget: crate::limits::MemoryBudget,
    exec_fd_table: HashMap<i32, FdTarget>,
    exec_input_fds: HashSet<i32>,
    random_state: u32,
    getopts_char_idx: usize,
    last_bg_pid: Option<String>,
    seconds_base: (crate::time_compat::Instant, i64),
    bash_subshell: u32,
    bashpid: u32,
    xtrace_depth: usize,
    err_trap_dormant: bool,
    debug_trap_dormant: bool,
    line_base: isize,
}

/// The command name and remaining fields when `$empty cmd args` drops the
/// name word; `None` when no argument yields a field either.
type VanishedName = Option<(String, Vec<String>)>;

/// Bits of `NoforkScope::subshell_env`, after bash's `subshell_environment`.
/// Inside `( )`: `exec` does not lower `$SHLVL`.
const SUBSHELL_PAREN: u8 = 1;
/// Inside a pipeline stage: a command run in place does not lower `$SHLVL`.
const SUBSHELL_PIPE: u8 = 2;

/// Fork suppression ("nofork"), modeled for `$SHLVL` only.
///
/// Important decision: bash execs some simple commands in place instead of
/// forking: the last one of a `bash -c` string or of a `$( )` body (both
/// parsed by `parse_and_execute`), the last one of a `( )` / `<( )` body,
/// and any simple command run with `&`. A disk command run that way first
/// lowers `$SHLVL` (`adjust_shell_level(-1)`), so a `bash` started there
/// ends at the same level. bashkit never forks; the only observable effect
/// is that level, so this records which command bash would run in place and
/// `execute_shell` applies the decrement. `target` is that command's
/// address: the AST outlives the scope that names it. Scopes form a chain
/// (`outer`) entered and left at each boundary instead of riding in
/// `SubshellSnapshot`: a snapshot field cost ~100 bytes of stack per
/// `$(...)` level in debug builds (TM-DOS-089). `reset_transient_state`
/// drops the chain, so a scope an error skipped leaving cannot outlive its
/// AST into the next exec.
#[derive(Clone, Default)]
struct NoforkScope {
    /// Address of the `SimpleCommand` bash would run in place, 0 for none.
    target: usize,
    /// Traps when this shell context began. A forked child resets the
    /// handlers it inherits, so only traps set since then keep the fork.
    trap_base: Option<Arc<HashMap<String, String>>>,
    /// `SUBSHELL_PAREN` / `SUBSHELL_PIPE` bits.
    subshell_env: u8,
    /// The enclosing context's scope, restored by `leave_nofork_scope`.
    outer: Option<Arc<NoforkScope>>,
}

/// Where a simple command's process substitutions start: the deferred `>(...)`
/// lists and the `/dev/fd/N` fds it opens are released from here when it ends.
#[derive(Clone, Copy)]
struct ProcSubMark {
    deferred: usize,
    fds: usize,
}

/// Interpreter state.
pub struct Interpreter {
    fs: Arc<dyn FileSystem>,
    env: Arc<HashMap<String, String>>,
    // Important decision: the maps that get snapshotted by subshell ($(...))
    // boundaries live in `scoped: ScopedState`, whose fields are `Arc<HashMap>`
    // so the snapshot is an O(1) refcount bump instead of an O(n) HashMap clone.
    // Mutations go through `vars_mut()` / `arrays_mut()` / etc. which call
    // `Arc::make_mut`; when the refcount is 1 (no live snapshot) this is just a
    // `&mut` borrow with zero clone cost. When the refcount is 2 (a subshell is
    // active and mutates), it pays one clone — the same cost the eager-clone
    // scheme paid unconditionally, but only when actually needed.
    scoped: ScopedState,
    /// Cached shell option flags. Synchronized with `SHOPT_*` entries in
    /// `variables` via `set_shopt_flag` / `set_shopt_value`.
    flags: BashFlags,
    cwd: PathBuf,
    last_exit_code: i32,
    /// Built-in commands (default + custom).
    ///
    /// Stored as `Arc` so the dispatcher can clone the handle out of the map
    /// and execute the builtin without keeping a borrow on `self.builtins`,
    /// which lets it freely take `&mut self` for `self.scoped.variables`,
    /// `self.cwd`, etc. during execution.
    builtins: BuiltinMap,
    /// Optional host-owned mutable registry. Consulted after shell functions
    /// and special builtins but before `builtins` — so host entries can
    /// override baked-in commands. Survives `reset_transient_state` because
    /// it lives behind an `Arc<RwLock>` shared with the embedder.
    host_builtins: Option<crate::builtins::BuiltinRegistry>,
    /// Names registered through `BashBuilder::builtin`. Their `Err` results
    /// keep aborting execution (public contract); bundled builtins' usage
    /// errors fail only the command (see `builtin_usage_error`).
    custom_builtin_names: Arc<HashSet<String>>,
    /// Optional last-chance name resolver. Consulted only after every other
    /// dispatch route has missed, immediately before `command not found`, so
    /// it can never shadow a function, builtin, or `$PATH` script.
    command_resolver: Option<Arc<dyn crate::builtins::CommandResolver>>,
    /// Call stack for local variable scoping
    call_stack: Vec<CallFrame>,
    /// Debug stack behind BASH_SOURCE / BASH_LINENO / FUNCNAME
    bash_source_stack: Vec<SourceFrame>,
    /// The pending line abort is a failed assignment (readonly target).
    assign_error_abort: bool,
    /// Directory at the last `PWD=...` / `unset PWD`: while the shell is
    /// still there, `$PWD` is that value instead of the working directory.
    pwd_shadow: Option<PathBuf>,
    /// Prefix assignments of the function call being dispatched
    /// (`v=x f`), with the values they replaced.
    pending_tempenv: Option<Vec<(String, Option<String>)>>,
    /// bash's temporary-environment scopes of running function calls:
    /// `(call_stack.len() below the function frame, name -> replaced value)`.
    /// `unset v` in the function removes the binding and reveals the value
    /// below (dynamic unset); `local v` takes the binding over.
    /// The flag marks a function call's scope (an `eval`/`source` one is
    /// never taken over by `local`).
    tempenv_frames: Vec<(usize, HashMap<String, Option<String>>, bool)>,
    /// The next `expand_word_to_fields` expands a declaration builtin's
    /// operand: `name=value` words are not field-split.
    decl_operand_fields: bool,
    /// Resource limits
    limits: ExecutionLimits,
    /// Session-level resource limits (persist across exec() calls)
    session_limits: SessionLimits,
    /// Per-instance memory limits
    memory_limits: crate::limits::MemoryLimits,
    /// Memory budget tracker
    memory_budget: crate::limits::MemoryBudget,
    // THREAT[TM-DOS-060]: Assignment helpers are called from many infallible
    // expansion paths. Remember the first rejected write and fail execution at
    // the next interpreter boundary; never report a dropped assignment as success.
    memory_limit_error: Option<crate::limits::LimitExceeded>,
    /// Trace event collector
    trace: crate::trace::TraceCollector,
    /// Execution counters for resource tracking
    counters: ExecutionCounters,
    /// Aggregate non-resettable budget shared by all descendants of one exec.
    execution_budget: crate::limits::ExecutionBudget,
    /// Job table for background execution (shared for wait builtin access)
    jobs: SharedJobTable,
    /// Current line number for $LINENO
    current_line: usize,
    /// Added to command line numbers: a trap handler counts its lines from
    /// the line of the command that triggered it (bash). Negative after a
    /// top-level command aborts mid-way (see `shift_lines_after_abort`).
    line_base: isize,
    /// Interactive shell (REPL / terminal): diagnostics name the shell but
    /// carry no `line N:`, like `bash -i`. See [`Self::diag_prefix`].
    interactive: bool,
    /// clix patch: the host's answer to `NAME --help`.
    flag_help: Option<FlagHelp>,
    /// `unset LINENO` makes it an ordinary variable for the rest of the
    /// shell's life, like bash.
    lineno_unset: bool,
    /// How many `source`d scripts are running. `return` is only legal inside
    /// a function or a sourced script, so it needs to tell the two apart from
    /// a plain top-level command.
    source_depth: usize,
    /// Bytes already accumulated by the command sequence that is running, as
    /// of the command about to run. A redirect `exec` installs applies from
    /// there on, so these mark where routing starts.
    sequence_accum: (usize, usize),
    /// Inside a redirect region where fd 2 and fd 1 end up at the same place
    /// (`{ ...; } 2>&1`, `f &>log`, `bash -c ... 2>&1`): each command's
    /// stderr joins stdout as it finishes, so the two keep their order.
    /// Off in command substitutions and multi-stage pipelines, whose stdout
    /// goes somewhere else.
    merge_stderr: bool,
    /// The running command has a `PATH=...` prefix assignment: bash then
    /// searches that PATH without the hash table and hashes nothing.
    temp_path: bool,
    /// `ShellRef::set_vars` for the running `test`/`[` call.
    test_set_vars: Vec<String>,
    /// `sequence_accum` as it was when `exec` last installed a target for
    /// fd 1 or 2: output written before that keeps going to the caller.
    exec_install_mark: (usize, usize),
    /// Set by the top-level loop when the command it runs is a `;`/`&&`
    /// list: `execute_list` then routes each element's output through the
    /// `exec` fd table as it finishes, so `exec 2>&1; cmd1; cmd2` sends
    /// `cmd1`'s stderr out before `cmd2` runs (not at the end of the line).
    route_top_list: bool,
    /// Lengths of the stdout/stderr a routed top-level list returned: the
    /// top-level loop routes only what was appended after them.
    top_list_routed: Option<(usize, usize)>,
    /// Name of the last simple command run, for a diagnostic raised after it
    /// returned: a write to a closed descriptor is reported at the subshell
    /// boundary, where the offending command is no longer in hand.
    last_command_name: String,
    /// HTTP client for network builtins (curl, wget)
    #[cfg(feature = "http_client")]
    http_client: Option<Arc<crate::network::HttpClient>>,
    /// Git client for git builtins
    #[cfg(feature = "git")]
    git_client: Option<Arc<crate::builtins::git::GitClient>>,
    /// SSH client for ssh/scp/sftp builtins
    #[cfg(feature = "ssh")]
    ssh_client: Option<Arc<crate::builtins::ssh::SshClient>>,
    /// Stdin inherited from pipeline for compound commands (while read, etc.)
    /// Each read operation consumes one line, advancing through the data.
    pipeline_stdin: Option<crate::StreamData>,
    /// Streaming stdin from a concurrent pipeline stage; read into
    /// `pipeline_stdin` on demand (see `fill_stdin_from_pipe`).
    pipe_in: Option<Arc<pipe::Pipe>>,
    /// Stdout pipe of this forked pipeline stage: command boundaries wait
    /// here for room and stop with 141 once the reader is gone.
    pipe_out: Option<Arc<pipe::Pipe>>,
    /// Address of the stage's own simple command when it is a streaming
    /// builtin (`yes`, `seq`): only that command writes straight into
    /// `pipe_out`, never a command run from its argument expansions.
    stream_stdout_command: Option<usize>,
    /// Where this shell context would run a simple command without a fork
    /// (see `NoforkScope`).
    nofork: Arc<NoforkScope>,
    /// Set just before a simple command dispatches: bash runs it in place
    /// (no fork), so a `bash`/`sh` it starts keeps this shell's `$SHLVL`.
    nofork_now: bool,
    /// Pipe handed to the next builtin's `Context` (taken at dispatch).
    builtin_stdout_pipe: Option<Arc<pipe::Pipe>>,
    /// Input pipe handed to a streaming filter's `Context` (taken at dispatch).
    builtin_stdin_pipe: Option<Arc<pipe::Pipe>>,
    /// `$BASH_SUBSHELL`: subshell nesting (`( )`, `$( )`, pipeline stages, jobs).
    bash_subshell: u32,
    /// `$BASHPID` of the subshell running now: a virtual pid from the job
    /// table's sequence, 0 in the shell itself (whose `$BASHPID` is `$$`).
    bashpid: u32,
    /// Extra `set -x` prefix levels: `$(...)`, `eval`, `source` and trap
    /// handlers each repeat PS4's first character once more (`++ cmd`).
    xtrace_depth: usize,
    /// Position within the current argument while `getopts` walks a clustered
    /// short-option group (e.g. `-abc`). Interpreter-internal working state for
    /// `execute_getopts`; `0` means "at the start of the next option group".
    /// Previously stored in the user variable namespace as `_OPTCHAR_IDX`.
    getopts_char_idx: usize,
    /// Sandboxed PID/job id of the most recent background command, surfaced as
    /// `$!`. Interpreter-internal state (not a host PID); subshell-isolated like
    /// any other shell state. Previously stored as the `_LAST_BG_PID` variable.
    last_bg_pid: Option<String>,
    /// Optional callback for streaming output chunks during execution.
    /// When set, output is emitted incrementally via this callback in addition
    /// to being accumulated in the returned ExecResult.
    output_callback: Option<OutputCallback>,
    /// Typed per-execution extensions visible to builtins for the current
    /// `exec*()` call. Stored behind a mutex so drop guards can restore it
    /// without borrowing the interpreter across `.await`.
    execution_extensions: Arc<StdMutex<Arc<builtins::ExecutionExtensions>>>,
    /// Monotonic counter incremented each time output is emitted via callback.
    /// Used to detect whether sub-calls already emitted output, preventing duplicates.
    output_emit_count: u64,
    /// Bytes already delivered to streaming output callbacks for this execution.
    /// Mirrors ExecResult caps so live consumers cannot bypass output limits.
    output_stream_stdout_bytes: usize,
    output_stream_stderr_bytes: usize,
    /// Pending nounset (set -u) error message, consumed by execute_command.
    nounset_error: Option<String>,
    /// Outputs of the `$(...)` parts of a `${x:-...}`-family operand, run
    /// ahead (async) and consumed in order by the sync `expand_operand`.
    operand_substs: std::collections::VecDeque<String>,
    /// PIPESTATUS: exit codes of the last pipeline's commands
    pipestatus: Vec<i32>,
    /// The pipelines of this exec, shared with its forks (clix patch).
    pipeline_log: Arc<pipeline_log::PipelineLog>,
    /// THREAT[TM-DOS-023]: Bounded cache for repeated `[[ value =~ pattern ]]` evaluations.
    regex_cache: RuntimeRegexCache,
    /// Command history entries for the current session.
    history: Vec<HistoryEntry>,
    /// Retained command/cwd bytes for bounded history accounting.
    history_bytes: usize,
    /// Number of retained entries already flushed to the VFS history file.
    history_saved_entries: usize,
    /// Whether the VFS history file needs compaction after trimming or clearing.
    history_needs_rewrite: bool,
    /// Optional VFS path for persisting history between sessions.
    history_file: Option<PathBuf>,
    /// Whether history has been loaded from VFS (to avoid re-loading on each exec).
    history_loaded: bool,
    /// bash `history`/`fc` bookkeeping ($HISTFILE positions, numbering).
    bash_hist: history::BashHistory,
    /// Reader of the shell's own input (top-level script, `bash` child):
    /// records history lines, runs PROMPT_COMMAND in `bash -i`.
    line_reader: Option<Box<history::LineReader>>,
    /// Top-level command lines read so far (prompt `\#`).
    command_number: u64,
    /// Sandbox identity for prompt escapes (`\u`, `\h`): the configured
    /// user and hostname, never the host's.
    prompt_user: String,
    prompt_host: String,
    /// The virtual `date` clock, for prompt time escapes (`\t`, `\d`).
    date_clock: builtins::Date,
    /// `complete`/`compopt`/`bind` state, built on first use (keeps startup
    /// free of it). Per interpreter: never shared between tenants.
    pub(super) completion: Option<Box<completion::CompletionState>>,
    /// Monotonic counter incremented on each command substitution execution.
    /// Used to detect whether assignment value expansion ran a command substitution
    /// (for correct exit code: plain assignment → 0, assignment with subst → subst's exit code).
    subst_generation: u64,
    /// Readable descriptors (fd >= 3): remaining lines of `exec 3<file` or
    /// a here-doc, or a coproc's output pipe (`coproc.rs`).
    coproc_buffers: HashMap<i32, coproc::InputFd>,
    /// Live coprocs of this shell, for cleanup (`coproc.rs`). Not forked.
    coprocs: Vec<coproc::CoprocEntry>,
    /// Persistent fd output table set by `exec N>/path` redirections.
    /// Maps fd number to its output target. Used by `>&N` redirections;
    /// entries for fd 1 and 2 (`exec >log 2>&1`) route the shell's own
    /// output at each top-level command (`route_exec_output`).
    exec_fd_table: HashMap<i32, FdTarget>,
    /// Fds opened by `exec N<&0` (or a dup of such an fd): they read the
    /// shell's stdin, which is what `<&N` falls back to, so only their
    /// "open" state needs tracking (fd allocation, `Bad file descriptor`).
    exec_input_fds: HashSet<i32>,
    /// Fds (>= 3) that the redirections of the commands currently executing
    /// (a function called as `f 3>&1`, `{ ...; } 3>file`) make available to
    /// their bodies. Routing of those is done by the pending-fd machinery;
    /// this only keeps `>&3` inside them from being a bad descriptor.
    fd_redirect_scope: Vec<i32>,
    /// Output written to a saved copy of the original stdout/stderr
    /// (`exec 3>&1 >log; echo hi >&3`) while fd 1/2 are redirected by
    /// `exec`. It skips that routing and goes straight to the caller.
    exec_passthrough: (crate::StreamData, crate::StreamData),
    /// Temporary buffer for fd3+ output during compound body execution.
    /// Populated by `1>&N` (N>=3) in apply_redirections, consumed by
    /// apply_redirections_fd_table for compound redirect routing.
    pending_fd_output: HashMap<i32, crate::StreamData>,
    /// Fd3+ targets from compound redirect processing (e.g. `3>&1` maps fd3→Stdout).
    /// Populated during apply_redirections_fd_table redirect loop, consumed during routing.
    pending_fd_targets: Vec<(i32, FdTarget)>,
    /// Depth counter for compound execution contexts that need fd3+ buffering.
    /// Only when >0 should `1>&N` (N>=3) output be captured in pending_fd_output.
    pending_fd_capture_depth: usize,
    /// Cancellation token: when set to `true`, execution aborts at the next
    /// command boundary with `Error::Cancelled`.
    cancelled: Arc<AtomicBool>,
    /// Interceptor hooks registry (shared with Bash callers).
    hooks: Arc<crate::hooks::Hooks>,
    /// True while executing a trap handler. Suppresses recursive DEBUG trap
    /// invocation to prevent amplification attacks (TM-DOS-035).
    in_trap: bool,
    /// Nesting level of `run_trap_command` entries (TM-DOS-020).
    trap_nesting: usize,
    /// First trap-nesting depth error, surfaced at the `exec` boundary.
    trap_depth_error: Option<LimitExceeded>,
    /// The ERR trap is inherited for display only: a subshell, command
    /// substitution or pipeline stage without `set -E` keeps the parent's
    /// handler visible to `trap -p` but does not run it (bash). `trap`
    /// setting or resetting ERR clears it.
    err_trap_dormant: bool,
    /// Set inside a `( )` subshell or `$( )` without `set -T`: the DEBUG
    /// trap stays listed but does not run there (bash).
    debug_trap_dormant: bool,
    /// The next `execute_command` is a multi-command pipeline stage: its own
    /// status never fires ERR (the pipeline as a whole does).
    err_trap_skip_stage: bool,
    /// Depth of if/while/until condition evaluation.
    /// Important decision: condition context is tracked as interpreter state so
    /// nested AND-OR lists can suppress ERR traps without weakening top-level
    /// final-command errexit behavior.
    condition_sequence_depth: usize,
    /// `set -e` stopped a command sequence (see the `!` pipeline arm).
    errexit_fired: bool,
    /// Deferred output process substitutions: after a command writes to the
    /// substitution's fd, run these commands with what it wrote as stdin.
    /// Each entry is (write buffer, commands_to_run).
    deferred_proc_subs: Vec<(crate::fs::ProcSubBuffer, Vec<Command>)>,
    /// This shell's `/dev/fd/N` namespace for process substitutions; `fs`
    /// is this same wrapper (see `fs/proc_sub_fds.rs`, TM-ISO-028).
    proc_subs: Arc<crate::fs::ProcSubFs>,
    /// PRNG state for $RANDOM (LCG seeded per-instance from OS entropy).
    /// NOT cryptographically secure — matches real bash behavior.
    /// Uses `AtomicU32` for interior mutability so $RANDOM can advance state
    /// in `expand_variable(&self, ...)` while remaining `Send + Sync`.
    random_state: AtomicU32,
    /// Language features enabled for this shell (see [`ShellFeatures`]).
    shell_features: ShellFeatures,
    /// Hardened profiles intentionally reduce elapsed-time precision.
    hardened_timing: bool,
    /// `$SECONDS` reads `seconds_base.1 + whole seconds since seconds_base.0`;
    /// set at shell start and on `SECONDS=N`.
    seconds_base: (crate::time_compat::Instant, i64),
    /// `&` jobs run concurrently (default) or to completion at spawn.
    concurrent_jobs: bool,
    /// Nesting depth of `execute_script_body`; finished background job output
    /// is delivered only between top-level (depth 1) commands.
    script_depth: usize,
    /// Nested `bash`/`sh` child shells (TM-DOS-125).
    child_shell_depth: usize,
    /// Enclosing `for`/`while`/`until`/`select` loops in the current
    /// function (bash `loop_level`). A function call starts at 0, so
    /// `break`/`continue` never leave the caller's loop.
    loop_depth: usize,
    /// Sandbox login name: `~name` expands to `/home/name` (and `~root`
    /// to `/root`); other `~user` forms stay literal.
    tilde_user: Arc<str>,
    /// The next `expand_operand` call tilde-expands a leading `~`
    /// (consumed by it).
    operand_tilde: bool,
    /// The `${...}` being expanded is unquoted, so a `${x:-~}` operand
    /// tilde-expands.
    operand_outer_unquoted: bool,
    /// The next `expand_operand` call expands a `${x/pat/rep}` replacement
    /// (literal text, not a pattern; consumed by it).
    operand_replacement: bool,
    /// Active function calls and `source`s: `return` is valid only when > 0.
    return_depth: usize,
    /// The last `[[ ]]` leaf was an invalid `=~` regex (status 2 if it
    /// decides the result).
    cond_regex_error: bool,
    /// Diagnostics from `[[ ]]` leaves (arithmetic operand errors).
    cond_stderr: String,
    /// Stderr written inside `$(...)` that has not reached a command result
    /// yet. bash's substitution shares the outer stderr, so its diagnostics
    /// (`x=$(nocmd)`) show; the command that expanded it emits them ahead of
    /// its own stderr, outside its own redirects (bash expands words first).
    subst_stderr: crate::StreamData,
    /// `subst_stderr` values set aside by enclosing commands and
    /// substitutions while an inner one runs. Kept here rather than in async
    /// locals so the recursive `$(...)` futures stay small (TM-DOS-089).
    subst_stderr_held: Vec<crate::StreamData>,
    /// First arithmetic error raised by a read-only evaluation site (array
    /// subscripts, `declare -i` values, substring offsets). The command
    /// boundary turns it into a line abort, as bash does.
    arith_error: StdMutex<Option<String>>,
    /// An expansion stopped at one of its caps (brace count, 10 MiB result)
    /// and kept a shorter value: the command must not run with it (clix
    /// patch, "an expansion's cap is an error").
    expansion_cap: StdMutex<Option<String>>,
    /// `set -u` and an arithmetic read of an unset name: the full
    /// `name: unbound variable` diagnostic. Fatal like any unbound
    /// expansion (non-interactive shells exit 1), not a line abort.
    arith_unbound: StdMutex<Option<String>>,
    /// Script depth of a child `bash -c` string, 0 for none. bash runs a
    /// `-c` string with `parse_and_execute`, where a discarded line
    /// (`exit 1 2`, `shift 1 2`) ends the whole string with status 1; a
    /// script file or stdin resumes at the next line.
    c_string_depth: usize,
    /// Set by `BuiltinSideEffect::DiscardCommandString`; read (and cleared)
    /// where the abort reaches the script's top level.
    builtin_discard: bool,
    /// Non-fatal "bad array subscript" reports from reads that hold only
    /// `&self` (`${a[-9]}`, `$((a[-9]))`); settled into the command's stderr.
    subscript_warnings: StdMutex<String>,
    /// Element words of `name=(...)` arguments of the command being run;
    /// see `declare::COMPOUND_MARK`.
    pending_compound_args: Vec<Vec<Word>>,
    /// Set while prefix assignments (`x=1 cmd`) run: bash stores those
    /// without applying `-i`/`-l`/`-u`.
    assign_raw: bool,
}

impl Interpreter {
    // Decision: restored `$!` must match Bashkit-produced virtual numeric job ids.
    const MAX_RESTORED_LAST_BG_PID_LEN: usize = 20;
    const MAX_GLOB_DEPTH: usize = 50;
    /// THREAT[TM-DOS-031]: recursive glob/extglob steps one match (or one
    /// pattern-removal/substitution scan) may spend before failing.
    const MAX_GLOB_STEPS: usize = 100_000;

    /// Create a new interpreter with the given filesystem.
    #[cfg(test)]
    pub fn new(fs: Arc<dyn FileSystem>) -> Self {
        Self::with_config(
            fs,
            None,
            None,
            None,
            None,
            HashMap::new(),
            None,
            ShellFeatures::default(),
            None,
            false,
        )
    }

    /// Create a new interpreter with custom username, hostname, and builtins.
    ///
    /// # Arguments
    ///
    /// * `fs` - The virtual filesystem to use
    /// * `username` - Optional custom username for virtual identity
    /// * `hostname` - Optional custom hostname for virtual identity
    /// * `custom_builtins` - Custom builtins to register (override defaults if same name)
    #[allow(clippy::too_many_arguments)]
    pub fn with_config(
        fs: Arc<dyn FileSystem>,
        username: Option<String>,
        hostname: Option<String>,
        fixed_epoch: Option<i64>,
        epoch_offset: Option<i64>,
        custom_builtins: HashMap<String, Box<dyn Builtin>>,
        host_builtins: Option<crate::builtins::BuiltinRegistry>,
        shell_features: ShellFeatures,
        builtin_filter: Option<BuiltinFilter>,
        hardened_timing: bool,
    ) -> Self {
        // Every VFS access of this shell (redirects, builtins, `source`,
        // tests) resolves `/dev/fd/N` in its own fd namespace first.
        let proc_subs = crate::fs::ProcSubFs::new(fs);
        let fs: Arc<dyn FileSystem> = Arc::clone(&proc_subs) as Arc<dyn FileSystem>;
        // Macro to reduce boilerplate for simple zero-arg builtin registration.
        // Custom-construction builtins (date, source, hostname, etc.) are registered below.
        macro_rules! register_builtins {
            ($map:ident, $( $name:literal => $type:ident ),+ $(,)?) => {
                $( $map.insert($name.to_string(), Arc::new(builtins::$type) as Arc<dyn Builtin>); )+
            };
        }

        let mut builtins = BuiltinMap::default();

        register_builtins!(builtins,
            // Core shell builtins
            "echo" => Echo,
            "true" => True,
            "false" => False,
            "exit" => Exit,
            "cd" => Cd,
            "pwd" => Pwd,
            "cat" => Cat,
            "break" => Break,
            "continue" => Continue,
            "return" => Return,
            "test" => Test,
            "[" => Bracket,
            "export" => Export,
            "read" => Read,
            "set" => Set,
            "unset" => Unset,
            "shift" => Shift,
            "local" => Local,
            // POSIX special built-ins
            ":" => Colon,
            "readonly" => Readonly,
            "times" => Times,
            "eval" => Eval,
            // Text processing
            "grep" => Grep,
            "sed" => Sed,
            "head" => Head,
            "tail" => Tail,
            "sort" => Sort,
            "uniq" => Uniq,
            "cut" => Cut,
            "tr" => Tr,
            "wc" => Wc,
            "nl" => Nl,
            "paste" => Paste,
            "column" => Column,
            "comm" => Comm,
            "diff" => Diff,
            "strings" => Strings,
            "tac" => Tac,
            "rev" => Rev,
            "fmt" => Fmt,
            "fold" => Fold,
            "expand" => Expand,
            "unexpand" => Unexpand,
            "join" => Join,
            "split" => Split,
            // File operations
            "basename" => Basename,
            "dirname" => Dirname,
            "realpath" => Realpath,
            "readlink" => Readlink,
            "mkdir" => Mkdir,
            "mktemp" => Mktemp,
            "uuidgen" => Uuidgen,
            "openssl" => Openssl,
            "mkfifo" => Mkfifo,
            "rm" => Rm,
            "cp" => Cp,
            "mv" => Mv,
            "chmod" => Chmod,
            "ln" => Ln,
            "chown" => Chown,
            "rmdir" => Rmdir,
            // Directory listing and search
            "ls" => Ls,
            "tree" => Tree,
            "truncate" => Truncate,
            "shuf" => Shuf,
            // File inspection
            "less" => Less,
            "man" => Man,
            "file" => File,
            "stat" => Stat,
            // Binary / encoding
            "od" => Od,
            "xxd" => Xxd,
            "hexdump" => Hexdump,
            "base64" => Base64,
            "md5sum" => Md5sum,
            "sha1sum" => Sha1sum,
            "sha256sum" => Sha256sum,
            "sha224sum" => Sha224sum,
            "sha384sum" => Sha384sum,
            "sha512sum" => Sha512sum,
            "b2sum" => B2sum,
            "cksum" => Cksum,
            "base32" => Base32,
            "basenc" => Basenc,
            "cmp" => Cmp,
            "factor" => Factor,
            "tsort" => Tsort,
            "nproc" => Nproc,
            "make" => Make,
            "arch" => Arch,
            "tty" => Tty,
            "free" => Free,
            "getconf" => Getconf,
            "sync" => SyncCmd,
            "hostid" => Hostid,
            "chgrp" => Chgrp,
            "shasum" => Shasum,
            "sum" => Sum,
            "dd" => Dd,
            "install" => Install,
            "umask" => Umask,
            "ulimit" => Ulimit,
            "locale" => Locale,
            "enable" => Enable,
            // Archive operations
            "tar" => Tar,
            "gzip" => Gzip,
            "gunzip" => Gunzip,
            "bzip2" => Bzip2,
            "bunzip2" => Bunzip2,
            "bzcat" => Bzcat,
            "zip" => Zip,
            "unzip" => Unzip,
            // Numeric / math
            "seq" => Seq,
            "expr" => Expr,
            "bc" => Bc,
            "numfmt" => Numfmt,
            // Misc utilities
            "yes" => Yes,
            "sleep" => Sleep,
            "kill" => Kill,
            "wait" => Wait,
            "jobs" => Jobs,
            "disown" => Disown,
            "bg" => Bg,
            "fg" => Fg,
            "ps" => Ps,
            "timeout" => Timeout,
            // Navigation
            "pushd" => Pushd,
            "popd" => Popd,
            "dirs" => Dirs,
            // Disk usage
            "du" => Du,
            "df" => Df,
            // Environment
            "env" => Env,
            "printenv" => Printenv,
            "history" => History,
            // Network
            "curl" => Curl,
            "wget" => Wget,
            "http" => Http,
            // Pipeline control
            "xargs" => Xargs,
            "tee" => Tee,
            "watch" => Watch,
            // Shell introspection (moved from interpreter if-chain)
            "type" => Type,
            "which" => Which,
            "hash" => Hash,
            "alias" => Alias,
            "unalias" => Unalias,
            "trap" => Trap,
            "caller" => Caller,
            "mapfile" => Mapfile,
            "readarray" => Mapfile,
            // Shell options
            "shopt" => Shopt,
            "clear" => Clear,
            // Extended builtins
            "envsubst" => Envsubst,
            "assert" => Assert,
            "dotenv" => Dotenv,
            "glob" => GlobCmd,
            "log" => Log,
            "retry" => Retry,
            "semver" => Semver,
            "verify" => Verify,
            "compgen" => Compgen,
            "csv" => Csv,
            "fc" => Fc,
            "help" => Help,
            "iconv" => Iconv,
            "json" => Json,
            "parallel" => Parallel,
            "patch" => Patch,
            "rg" => Rg,
            "template" => Template,
            "tomlq" => Tomlq,
        );

        // jq builtin (requires jq feature)
        // vi builtin (requires terminal feature; needs a Terminal session)
        #[cfg(feature = "terminal")]
        builtins.insert("vi".to_string(), Arc::new(builtins::Vi));
        #[cfg(feature = "terminal")]
        builtins.insert("nano".to_string(), Arc::new(builtins::Nano));
        #[cfg(feature = "terminal")]
        builtins.insert("more".to_string(), Arc::new(builtins::More));
        #[cfg(feature = "jq")]
        builtins.insert("jq".to_string(), Arc::new(builtins::Jq));
        #[cfg(feature = "jq")]
        builtins.insert("yq".to_string(), Arc::new(builtins::Yq));

        // Custom-construction builtins that need parameters

        // source/. requires filesystem access
        builtins.insert(
            "source".to_string(),
            Arc::new(builtins::Source::new(fs.clone())),
        );
        builtins.insert(".".to_string(), Arc::new(builtins::Source::new(fs.clone())));
        builtins.insert("nohup".to_string(), Arc::new(builtins::RunAs::nohup()));
        builtins.insert("nice".to_string(), Arc::new(builtins::RunAs::nice()));
        builtins.insert("flock".to_string(), Arc::new(builtins::RunAs::flock()));
        builtins.insert("sudo".to_string(), Arc::new(builtins::RunAs::sudo()));
        builtins.insert("busybox".to_string(), Arc::new(builtins::RunAs::busybox()));
        builtins.insert("egrep".to_string(), Arc::new(builtins::GrepAlias::egrep()));
        builtins.insert("fgrep".to_string(), Arc::new(builtins::GrepAlias::fgrep()));
        builtins.insert("link".to_string(), Arc::new(builtins::Link::hard()));
        builtins.insert("unlink".to_string(), Arc::new(builtins::Link::unlink()));

        // THREAT[TM-INF-018]: Resolve the virtual clock mode for `date`.
        // Priority: fixed_epoch > epoch_offset > real clock.
        // printf's `%(fmt)T` shares the same clock.
        let clock = if let Some(epoch) = fixed_epoch {
            use chrono::DateTime;
            builtins::Date::with_fixed_epoch(DateTime::from_timestamp(epoch, 0).unwrap_or_default())
        } else if let Some(offset) = epoch_offset {
            builtins::Date::with_offset_seconds(offset)
        } else {
            builtins::Date::new()
        };
        builtins.insert("date".to_string(), Arc::new(clock));
        builtins.insert(
            "printf".to_string(),
            Arc::new(builtins::Printf::with_clock(clock)),
        );
        builtins.insert(
            "touch".to_string(),
            Arc::new(builtins::Touch::with_clock(clock)),
        );
        builtins.insert("pr".to_string(), Arc::new(builtins::Pr::with_clock(clock)));
        for name in ["complete", "compopt", "bind"] {
            builtins.insert(name.to_string(), Arc::new(builtins::ShellOnly(name)));
        }
        for name in ["awk", "gawk", "mawk", "nawk"] {
            builtins.insert(name.to_string(), Arc::new(builtins::Awk::with_clock(clock)));
        }

        // System info builtins (configurable virtual values)
        let hostname_val = hostname.unwrap_or_else(|| builtins::DEFAULT_HOSTNAME.to_string());
        let username_val = username.unwrap_or_else(|| builtins::DEFAULT_USERNAME.to_string());
        builtins.insert(
            "hostname".to_string(),
            Arc::new(builtins::Hostname::with_hostname(&hostname_val)),
        );
        builtins.insert(
            "uname".to_string(),
            Arc::new(builtins::Uname::with_hostname(&hostname_val)),
        );
        builtins.insert(
            "whoami".to_string(),
            Arc::new(builtins::Whoami::with_username(&username_val)),
        );
        builtins.insert(
            "groups".to_string(),
            Arc::new(builtins::UserInfo::groups(&username_val)),
        );
        builtins.insert(
            "logname".to_string(),
            Arc::new(builtins::UserInfo::logname(&username_val)),
        );
        builtins.insert("users".to_string(), Arc::new(builtins::UserInfo::users()));
        builtins.insert("who".to_string(), Arc::new(builtins::UserInfo::who()));
        builtins.insert(
            "uptime".to_string(),
            Arc::new(builtins::Uptime::with_clock(clock)),
        );
        builtins.insert(
            "find".to_string(),
            Arc::new(builtins::Find::new(clock, &username_val)),
        );
        builtins.insert("pgrep".to_string(), Arc::new(builtins::Pgrep::new()));
        builtins.insert("pkill".to_string(), Arc::new(builtins::Pgrep::pkill()));
        builtins.insert(
            "id".to_string(),
            Arc::new(builtins::Id::with_username(&username_val)),
        );

        // Git builtin (requires git feature and configuration at runtime)
        #[cfg(feature = "git")]
        builtins.insert("git".to_string(), Arc::new(builtins::Git));

        // SSH builtins (requires ssh feature and configuration at runtime)
        #[cfg(feature = "ssh")]
        {
            builtins.insert("ssh".to_string(), Arc::new(builtins::Ssh));
            builtins.insert("scp".to_string(), Arc::new(builtins::Scp));
            builtins.insert("sftp".to_string(), Arc::new(builtins::Sftp));
        }

        if let Some(filter) = builtin_filter {
            builtins.retain(|name, _| filter(name));
        }

        let custom_builtin_names: Arc<HashSet<String>> =
            Arc::new(custom_builtins.keys().cloned().collect());
        // Merge custom builtins (override defaults if same name).
        // `Arc::from(Box<dyn Builtin>)` reuses the existing allocation.
        for (name, builtin) in custom_builtins {
            builtins.insert(name, Arc::from(builtin));
        }

        // Initialize default shell variables
        let mut variables = HashMap::new();
        variables.insert("HOME".to_string(), format!("/home/{}", &username_val));
        variables.insert("USER".to_string(), username_val.clone());
        variables.insert("UID".to_string(), "1000".to_string());
        variables.insert("EUID".to_string(), "1000".to_string());
        variables.insert("PPID".to_string(), "0".to_string());
        variables.insert("HOSTNAME".to_string(), hostname_val.clone());
        // Platform/shell identity agents branch on (`$OSTYPE`, `$PATH`, ...).
        // Synthetic, never read from the host (TM-INF rules).
        variables.insert("PATH".to_string(), DEFAULT_PATH.to_string());
        variables.insert("SHELL".to_string(), "/bin/bash".to_string());
        // `$_` starts as the shell's own path (bash), so `set -u` scripts
        // can read it before any command ran.
        variables.insert("_".to_string(), "/bin/bash".to_string());
        variables.insert("SHLVL".to_string(), "1".to_string());
        variables.insert("OSTYPE".to_string(), "linux-gnu".to_string());
        variables.insert("HOSTTYPE".to_string(), "x86_64".to_string());
        variables.insert("MACHTYPE".to_string(), "x86_64-pc-linux-gnu".to_string());
        // bash starts every shell with OPTIND=1 (getopts state).
        variables.insert("OPTIND".to_string(), "1".to_string());
        // ... and PS4 set, so `unset PS4` turns the xtrace prefix off.
        variables.insert("PS4".to_string(), "+ ".to_string());

        // BASH_VERSINFO array: (major minor patch build status machine)
        let mut arrays = HashMap::new();
        arrays.insert("BASH_VERSINFO".to_string(), compat_bash_versinfo_array());

        // Seed PRNG for $RANDOM from OS entropy via RandomState
        let random_seed = {
            use std::collections::hash_map::RandomState;
            use std::hash::{BuildHasher, Hasher};
            RandomState::new().build_hasher().finish() as u32
        };

        // Read-only from startup, as in bash: the user ids and parent pid
        // (`UID=0 cmd` cannot fake them) and the option lists, which are
        // computed on read (see `expand_variable`).
        let mut var_attrs = HashMap::new();
        for name in ["UID", "EUID", "PPID"] {
            var_attrs.insert(name.to_string(), VarAttrs::READONLY | VarAttrs::INTEGER);
        }
        for name in ["SHELLOPTS", "BASHOPTS"] {
            var_attrs.insert(name.to_string(), VarAttrs::READONLY);
        }
        // bash exports PWD and OLDPWD at startup (OLDPWD stays unset until
        // the first `cd`). Both hold virtual VFS paths, never host paths.
        for name in ["PWD", "OLDPWD"] {
            var_attrs.insert(name.to_string(), VarAttrs::EXPORT);
        }
        let initial_cwd = PathBuf::from("/home/user");
        let mut initial_env = HashMap::new();
        initial_env.insert(
            "PWD".to_string(),
            initial_cwd.to_string_lossy().into_owned(),
        );

        Self {
            fs,
            env: Arc::new(initial_env),
            scoped: ScopedState {
                variables: Arc::new(variables),
                arrays: Arc::new(arrays),
                var_attrs: Arc::new(var_attrs),
                ..Default::default()
            },
            flags: BashFlags::empty(),
            cwd: initial_cwd,
            last_exit_code: 0,
            builtins,
            host_builtins,
            custom_builtin_names,
            command_resolver: None,
            call_stack: Vec::new(),
            bash_source_stack: Vec::new(),
            assign_error_abort: false,
            pwd_shadow: None,
            pending_tempenv: None,
            tempenv_frames: Vec::new(),
            decl_operand_fields: false,
            limits: ExecutionLimits::default(),
            session_limits: SessionLimits::default(),
            memory_limits: crate::limits::MemoryLimits::default(),
            memory_budget: crate::limits::MemoryBudget::default(),
            memory_limit_error: None,
            trace: crate::trace::TraceCollector::default(),
            counters: ExecutionCounters::new(),
            execution_budget: crate::limits::ExecutionBudget::new(
                &ExecutionLimits::cli(),
                Arc::new(AtomicBool::new(false)),
            ),
            jobs: jobs::new_shared_job_table(),
            current_line: 1,
            line_base: 0,
            interactive: false,
            flag_help: None,
            lineno_unset: false,
            source_depth: 0,
            last_command_name: String::new(),
            sequence_accum: (0, 0),
            merge_stderr: false,
            temp_path: false,
            test_set_vars: Vec::new(),
            exec_install_mark: (0, 0),
            route_top_list: false,
            top_list_routed: None,
            #[cfg(feature = "http_client")]
            http_client: None,
            #[cfg(feature = "git")]
            git_client: None,
            #[cfg(feature = "ssh")]
            ssh_client: None,
            pipeline_stdin: None,
            pipe_in: None,
            pipe_out: None,
            stream_stdout_command: None,
            nofork: Arc::default(),
            nofork_now: false,
            builtin_stdout_pipe: None,
            builtin_stdin_pipe: None,
            bash_subshell: 0,
            bashpid: 0,
            xtrace_depth: 0,
            getopts_char_idx: 0,
            last_bg_pid: None,
            output_callback: None,
            execution_extensions: Arc::new(StdMutex::new(Arc::new(
                builtins::ExecutionExtensions::new(),
            ))),
            output_emit_count: 0,
            output_stream_stdout_bytes: 0,
            output_stream_stderr_bytes: 0,
            nounset_error: None,
            operand_substs: std::collections::VecDeque::new(),
            pipestatus: Vec::new(),
            pipeline_log: Arc::default(),
            regex_cache: RuntimeRegexCache::default(),
            history: Vec::new(),
            history_bytes: 0,
            history_saved_entries: 0,
            history_needs_rewrite: false,
            history_file: None,
            history_loaded: false,
            bash_hist: history::BashHistory::default(),
            line_reader: None,
            command_number: 0,
            prompt_user: username_val.clone(),
            prompt_host: hostname_val.clone(),
            date_clock: clock,
            completion: None,
            subst_generation: 0,
            coproc_buffers: HashMap::new(),
            coprocs: Vec::new(),
            exec_fd_table: HashMap::new(),
            exec_input_fds: HashSet::new(),
            fd_redirect_scope: Vec::new(),
            exec_passthrough: Default::default(),
            pending_fd_output: HashMap::new(),
            pending_fd_targets: Vec::new(),
            pending_fd_capture_depth: 0,
            cancelled: Arc::new(AtomicBool::new(false)),
            hooks: Arc::new(crate::hooks::Hooks::default()),
            in_trap: false,
            trap_nesting: 0,
            trap_depth_error: None,
            err_trap_dormant: false,
            debug_trap_dormant: false,
            err_trap_skip_stage: false,
            condition_sequence_depth: 0,
            errexit_fired: false,
            deferred_proc_subs: Vec::new(),
            proc_subs,
            random_state: AtomicU32::new(random_seed),
            shell_features,
            hardened_timing,
            seconds_base: (crate::time_compat::Instant::now(), 0),
            concurrent_jobs: true,
            script_depth: 0,
            child_shell_depth: 0,
            loop_depth: 0,
            tilde_user: Arc::from(username_val.as_str()),
            operand_tilde: false,
            operand_outer_unquoted: false,
            operand_replacement: false,
            return_depth: 0,
            cond_regex_error: false,
            cond_stderr: String::new(),
            subst_stderr: crate::StreamData::new(),
            subst_stderr_held: Vec::new(),
            arith_error: StdMutex::new(None),
            expansion_cap: StdMutex::new(None),
            arith_unbound: StdMutex::new(None),
            c_string_depth: 0,
            builtin_discard: false,
            subscript_warnings: StdMutex::new(String::new()),
            pending_compound_args: Vec::new(),
            assign_raw: false,
        }
    }

    /// Set `$?` from outside a command (terminal carries it across lines).
    #[cfg(feature = "terminal")]
    pub(crate) fn set_last_exit_code(&mut self, code: i32) {
        self.last_exit_code = code;
    }

    /// Return a shared cancellation token. Set it to `true` from any thread
    /// to abort execution at the next command boundary.
    pub fn cancellation_token(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }

    /// Start a fresh host-request budget. Internal descendants only clone it.
    pub(crate) fn begin_execution_budget(&mut self) {
        self.execution_budget =
            crate::limits::ExecutionBudget::new(&self.limits, Arc::clone(&self.cancelled));
    }

    /// Re-admit persistent command storage after installing the request guard.
    pub(crate) fn bind_command_hash_budget(&mut self) -> Result<()> {
        Arc::make_mut(&mut self.scoped.command_hash).bind_budget(&self.execution_budget)
    }

    pub(crate) fn execution_budget(&self) -> &crate::limits::ExecutionBudget {
        &self.execution_budget
    }

    /// Return a reference to the hooks registry.
    pub fn hooks(&self) -> &crate::hooks::Hooks {
        &self.hooks
    }

    pub(crate) fn current_execution_extensions(&self) -> Arc<builtins::ExecutionExtensions> {
        self.execution_extensions
            .lock()
            .expect("interpreter execution extensions lock")
            .clone()
    }

    /// Drop builtin-owned hidden state after snapshot restore.
    ///
    /// Security: snapshots define the shell/VFS boundary. Builtin caches (for
    /// example SQLite engines) must not retain stale state that can be read or
    /// flushed back after the VFS has been restored.
    pub(crate) fn reset_builtin_session_state(&self) {
        for builtin in self.builtins.values() {
            builtin.reset_session_state();
        }
    }

    pub(crate) fn scoped_execution_extensions(
        &self,
        extensions: builtins::ExecutionExtensions,
    ) -> ExecutionExtensionsGuard {
        let scope = extensions
            .scope()
            .expect("execution extensions must be bound before installation");
        let previous = {
            let mut slot = self
                .execution_extensions
                .lock()
                .expect("interpreter execution extensions lock");
            std::mem::replace(&mut *slot, Arc::new(extensions))
        };
        ExecutionExtensionsGuard {
            slot: self.execution_extensions.clone(),
            previous: Some(previous),
            scope,
        }
    }

    /// Run `&` jobs concurrently (default) or to completion when spawned.
    pub(crate) fn set_concurrent_jobs(&mut self, enabled: bool) {
        self.concurrent_jobs = enabled;
    }

    /// Fork the shell for a background job: a subshell's view of the state
    /// (variables, functions, cwd, fds, options) with shared filesystem,
    /// builtins, hooks, budget and cancellation. The job gets its own job
    /// table, output accumulators and history.
    fn fork_for_job(&self) -> Interpreter {
        let random_seed = self
            .random_state
            .load(Ordering::Relaxed)
            .wrapping_mul(1_103_515_245)
            .wrapping_add(12_345);
        // The job inherits the open substitution fds, then owns its copy.
        let job_proc_subs = self.proc_subs.fork();
        Interpreter {
            fs: Arc::clone(&job_proc_subs) as Arc<dyn FileSystem>,
            env: self.env.clone(),
            scoped: self.scoped.clone(),
            source_depth: self.source_depth,
            last_command_name: self.last_command_name.clone(),
            sequence_accum: self.sequence_accum,
            merge_stderr: false,
            temp_path: false,
            test_set_vars: Vec::new(),
            exec_install_mark: self.exec_install_mark,
            route_top_list: false,
            top_list_routed: None,
            flags: self.flags,
            cwd: self.cwd.clone(),
            last_exit_code: self.last_exit_code,
            builtins: self.builtins.clone(),
            host_builtins: self.host_builtins.clone(),
            custom_builtin_names: Arc::clone(&self.custom_builtin_names),
            command_resolver: self.command_resolver.clone(),
            call_stack: self.call_stack.clone(),
            bash_source_stack: self.bash_source_stack.clone(),
            assign_error_abort: false,
            pwd_shadow: None,
            pending_tempenv: None,
            tempenv_frames: Vec::new(),
            decl_operand_fields: false,
            limits: self.limits.clone(),
            session_limits: self.session_limits.clone(),
            memory_limits: self.memory_limits.clone(),
            memory_budget: self.memory_budget.clone(),
            memory_limit_error: None,
            trace: crate::trace::TraceCollector::new(self.trace.mode()),
            counters: self.counters.clone(),
            execution_budget: self.execution_budget.clone(),
            jobs: self.jobs.fork(),
            current_line: self.current_line,
            line_base: self.line_base,
            interactive: self.interactive,
            flag_help: self.flag_help.clone(),
            lineno_unset: self.lineno_unset,
            #[cfg(feature = "http_client")]
            http_client: self.http_client.clone(),
            #[cfg(feature = "git")]
            git_client: self.git_client.clone(),
            #[cfg(feature = "ssh")]
            ssh_client: self.ssh_client.clone(),
            pipeline_stdin: None,
            pipe_in: None,
            pipe_out: None,
            stream_stdout_command: None,
            // A job runs no command in place until told so (`spawn_in_background`).
            nofork: Arc::new(NoforkScope {
                subshell_env: self.nofork.subshell_env,
                ..NoforkScope::default()
            }),
            nofork_now: false,
            builtin_stdout_pipe: None,
            builtin_stdin_pipe: None,
            bash_subshell: self.bash_subshell + 1,
            bashpid: self.jobs.lock().alloc_pid(),
            xtrace_depth: self.xtrace_depth,
            getopts_char_idx: self.getopts_char_idx,
            last_bg_pid: self.last_bg_pid.clone(),
            output_callback: None,
            execution_extensions: Arc::clone(&self.execution_extensions),
            output_emit_count: 0,
            output_stream_stdout_bytes: 0,
            output_stream_stderr_bytes: 0,
            nounset_error: None,
            operand_substs: std::collections::VecDeque::new(),
            pipestatus: Vec::new(),
            pipeline_log: Arc::clone(&self.pipeline_log),
            regex_cache: RuntimeRegexCache::default(),
            history: Vec::new(),
            history_bytes: 0,
            history_saved_entries: 0,
            history_needs_rewrite: false,
            history_file: None,
            history_loaded: true,
            bash_hist: history::BashHistory::default(),
            line_reader: None,
            command_number: self.command_number,
            prompt_user: self.prompt_user.clone(),
            prompt_host: self.prompt_host.clone(),
            date_clock: self.date_clock,
            completion: self.completion.clone(),
            subst_generation: self.subst_generation,
            coproc_buffers: HashMap::new(),
            coprocs: Vec::new(),
            exec_fd_table: self.exec_fd_table.clone(),
            exec_input_fds: self.exec_input_fds.clone(),
            fd_redirect_scope: self.fd_redirect_scope.clone(),
            exec_passthrough: Default::default(),
            pending_fd_output: HashMap::new(),
            pending_fd_targets: Vec::new(),
            pending_fd_capture_depth: 0,
            cancelled: Arc::clone(&self.cancelled),
            hooks: Arc::clone(&self.hooks),
            in_trap: false,
            trap_nesting: 0,
            trap_depth_error: None,
            // A job or pipeline stage is a subshell: ERR stays dormant there
            // unless `set -E`.
            err_trap_dormant: self.err_trap_dormant || !self.flags.contains(BashFlags::ERRTRACE),
            debug_trap_dormant: self.debug_trap_dormant,
            err_trap_skip_stage: false,
            condition_sequence_depth: self.condition_sequence_depth,
            errexit_fired: false,
            deferred_proc_subs: Vec::new(),
            proc_subs: job_proc_subs,
            random_state: AtomicU32::new(random_seed),
            shell_features: self.shell_features,
            hardened_timing: self.hardened_timing,
            seconds_base: self.seconds_base,
            concurrent_jobs: self.concurrent_jobs,
            script_depth: 1,
            // Forks are polled on this task's stack, so they inherit its depth.
            child_shell_depth: self.child_shell_depth,
            loop_depth: self.loop_depth,
            tilde_user: self.tilde_user.clone(),
            operand_tilde: false,
            operand_outer_unquoted: false,
            operand_replacement: false,
            return_depth: self.return_depth,
            cond_regex_error: false,
            cond_stderr: String::new(),
            subst_stderr: crate::StreamData::new(),
            subst_stderr_held: Vec::new(),
            arith_error: StdMutex::new(None),
            expansion_cap: StdMutex::new(None),
            arith_unbound: StdMutex::new(None),
            c_string_depth: 0,
            builtin_discard: false,
            subscript_warnings: StdMutex::new(String::new()),
            pending_compound_args: Vec::new(),
            assign_raw: false,
        }
    }

    /// Replace the hooks registry (called from BashBuilder::build).
    pub(crate) fn set_hooks(&mut self, hooks: crate::hooks::Hooks) {
        self.hooks = Arc::new(hooks);
    }

    // === CoW accessors ===
    // `Arc::make_mut` returns a `&mut HashMap`, cloning the inner map only
    // when the Arc has more than one strong reference (i.e. a live subshell
    // snapshot). In the steady state (refcount==1) this is just a plain
    // mutable borrow with zero clone cost. The compiler can usually inline
    // these into the call site.

    #[inline]
    fn vars_mut(&mut self) -> &mut HashMap<String, String> {
        Arc::make_mut(&mut self.scoped.variables)
    }

    /// Mutable exported environment. `env` is an `Arc` for the same reason
    /// as `scoped`: subshell snapshots take it in O(1), so `(E=2)` cannot
    /// leak an export into the parent.
    #[inline]
    fn env_mut(&mut self) -> &mut HashMap<String, String> {
        Arc::make_mut(&mut self.env)
    }

    #[inline]
    /// A simple command is a one-element pipeline: bash sets
    /// `PIPESTATUS=(status)` after it. Skips the write when unchanged so the
    /// copy-on-write array map is not cloned on every command.
    fn set_simple_pipestatus(&mut self, code: i32) {
        let unchanged = self.scoped.arrays.get("PIPESTATUS").is_some_and(|arr| {
            arr.len() == 1 && arr.get(&0).is_some_and(|v| v.parse() == Ok(code))
        });
        self.pipestatus.clear();
        self.pipestatus.push(code);
        if !unchanged {
            let mut ps_arr = HashMap::with_capacity(1);
            ps_arr.insert(0, code.to_string());
            self.arrays_mut().insert("PIPESTATUS".to_string(), ps_arr);
        }
    }

    fn arrays_mut(&mut self) -> &mut HashMap<String, HashMap<usize, String>> {
        Arc::make_mut(&mut self.scoped.arrays)
    }

    #[inline]
    fn assoc_arrays_mut(&mut self) -> &mut HashMap<String, HashMap<String, String>> {
        Arc::make_mut(&mut self.scoped.assoc_arrays)
    }

    #[inline]
    fn functions_mut(&mut self) -> &mut HashMap<String, FunctionDef> {
        Arc::make_mut(&mut self.scoped.functions)
    }

    fn function_retained_bytes(&self, func: &FunctionDef) -> usize {
        function_storage_bytes(func).saturating_add(
            self.scoped
                .function_files
                .get(&func.name)
                .map_or(0, |file| file.len().saturating_add(func.name.len())),
        )
    }

    fn remove_function(&mut self, name: &str) {
        if let Some(func) = self.scoped.functions.get(name) {
            let bytes = self.function_retained_bytes(func);
            self.memory_budget.record_function_remove(bytes);
            self.functions_mut().remove(name);
        }
        Arc::make_mut(&mut self.scoped.function_files).remove(name);
    }

    #[inline]
    fn traps_mut(&mut self) -> &mut HashMap<String, String> {
        Arc::make_mut(&mut self.scoped.traps)
    }

    #[inline]
    fn var_attrs_mut(&mut self) -> &mut HashMap<String, VarAttrs> {
        Arc::make_mut(&mut self.scoped.var_attrs)
    }

    #[inline]
    fn namerefs_mut(&mut self) -> &mut HashMap<String, String> {
        Arc::make_mut(&mut self.scoped.namerefs)
    }

    /// Check cancellation and resource failures recorded by read-only expansion.
    fn check_cancelled(&self) -> Result<()> {
        if let Some(error) = &self.memory_limit_error {
            return Err(crate::error::Error::ResourceLimit(error.clone()));
        }
        if self.cancelled.load(Ordering::Relaxed) {
            Err(crate::error::Error::Cancelled)
        } else {
            self.execution_budget.check().map_err(Into::into)
        }
    }

    /// Check if errexit (set -e) is enabled.
    /// Sync the debug stack to the `BASH_SOURCE`, `BASH_LINENO` and
    /// `FUNCNAME` arrays (index 0 = innermost frame). `FUNCNAME` exists only
    /// while a function runs (bash), so a file sourced at top level shows
    /// no `source` entry.
    fn update_bash_source(&mut self) {
        if self.bash_source_stack.is_empty() {
            let arrays = self.arrays_mut();
            arrays.remove("BASH_SOURCE");
            arrays.remove("BASH_LINENO");
            arrays.remove("FUNCNAME");
            return;
        }
        let frames = &self.bash_source_stack;
        let source: HashMap<usize, String> = frames
            .iter()
            .rev()
            .enumerate()
            .map(|(i, f)| (i, f.file.to_string()))
            .collect();
        let lineno: HashMap<usize, String> = frames
            .iter()
            .rev()
            .enumerate()
            .map(|(i, f)| (i, f.call_line.to_string()))
            .collect();
        let funcname: Option<HashMap<usize, String>> =
            frames.iter().any(|f| f.is_function).then(|| {
                frames
                    .iter()
                    .rev()
                    .enumerate()
                    .map(|(i, f)| (i, f.funcname.clone()))
                    .collect()
            });
        let arrays = self.arrays_mut();
        arrays.insert("BASH_SOURCE".to_string(), source);
        arrays.insert("BASH_LINENO".to_string(), lineno);
        match funcname {
            Some(f) => arrays.insert("FUNCNAME".to_string(), f),
            None => arrays.remove("FUNCNAME"),
        };
    }

    fn is_errexit_enabled(&self) -> bool {
        self.flags.contains(BashFlags::ERREXIT)
    }

    /// `set -e` fires here: on, and not inside a context where bash ignores
    /// it (an `if`/`while`/`until` condition, a non-final `&&`/`||` element,
    /// a `!` pipeline). Those contexts reach into function bodies and
    /// subshells run from them, so `if f; then` never stops inside `f`.
    fn errexit_active(&self) -> bool {
        self.is_errexit_enabled() && self.condition_sequence_depth == 0
    }

    /// Check if xtrace (set -x) is enabled.
    fn is_xtrace_enabled(&self) -> bool {
        self.flags.contains(BashFlags::XTRACE)
    }

    /// Rehydrate the SHOPT flag cache from any `SHOPT_*` entries currently in
    /// `self.scoped.variables`. Call after bulk-restoring `variables` from a snapshot
    /// or builder so the cache doesn't drift.
    fn refresh_shopt_flags(&mut self) {
        // Look the options up rather than walk every variable: this runs
        // after every builtin (clix patch, "a command's fixed costs").
        self.flags = BashFlags::empty();
        for (name, bit) in BashFlags::BY_SHOPT_NAME {
            if self.scoped.variables.get(name).is_some_and(|v| v == "1") {
                self.flags.insert(bit);
            }
        }
    }

    // === Variable attribute helpers ===
    // Reading/writing readonly/integer/lower/upper attributes via the
    // dedicated `var_attrs` HashMap. The old `_READONLY_X`/etc. format!()
    // approach has been removed from the hot path; see VarAttrs above.

    fn var_attrs_get(&self, name: &str) -> VarAttrs {
        self.scoped.var_attrs.get(name).copied().unwrap_or_default()
    }

    fn is_var_readonly(&self, name: &str) -> bool {
        self.var_attrs_get(name).contains(VarAttrs::READONLY)
    }

    fn add_var_attr(&mut self, name: &str, attr: VarAttrs) {
        // entry-by-string-slice — only allocates when inserting new entry
        match self.var_attrs_mut().get_mut(name) {
            Some(existing) => existing.insert(attr),
            None => {
                self.var_attrs_mut().insert(name.to_string(), attr);
            }
        }
    }

    fn remove_var_attr(&mut self, name: &str, attr: VarAttrs) {
        if let Some(existing) = self.var_attrs_mut().get_mut(name) {
            existing.remove(attr);
            if existing.is_empty() {
                self.var_attrs_mut().remove(name);
            }
        }
    }

    fn clear_var_attrs(&mut self, name: &str) {
        self.var_attrs_mut().remove(name);
    }

    fn set_nameref(&mut self, name: &str, target: String) {
        self.namerefs_mut().insert(name.to_string(), target);
    }

    fn remove_nameref(&mut self, name: &str) {
        self.namerefs_mut().remove(name);
    }

    /// Set execution limits.
    pub fn set_limits(&mut self, limits: ExecutionLimits) {
        self.limits = limits;
    }

    /// Set session-level limits.
    pub fn set_session_limits(&mut self, limits: SessionLimits) {
        self.session_limits = limits;
    }

    /// Count a host-level Bash::exec invocation before parsing untrusted input.
    pub(crate) fn begin_exec_invocation(&mut self) -> Result<()> {
        self.counters.reset_for_execution();
        self.counters.tick_exec_call();
        self.counters
            .check_session_limits(&self.session_limits)
            .map_err(|e| crate::error::Error::Execution(e.to_string()))
    }

    /// Set per-instance memory limits.
    pub fn set_memory_limits(&mut self, limits: crate::limits::MemoryLimits) {
        self.memory_limits = limits;
    }

    /// Set the trace collector.
    pub fn set_trace(&mut self, trace: crate::trace::TraceCollector) {
        self.trace = trace;
    }

    /// Get execution limits.
    pub fn limits(&self) -> &ExecutionLimits {
        &self.limits
    }

    /// `set -o` option variable names (SHOPT_e, SHOPT_x, etc.) that are
    /// transient and must be reset between exec() calls (TM-ISO-023).
    /// `shopt` options (SHOPT_expand_aliases, SHOPT_extglob, etc.) are
    /// persistent session configuration and are NOT reset.
    /// (`interactive-comments` is shared with `shopt`, so it persists.)
    fn set_option_vars() -> impl Iterator<Item = &'static str> {
        builtins::SET_O_OPTIONS
            .iter()
            .map(|(_, _, var, _)| *var)
            .filter(|var| *var != "SHOPT_interactive_comments")
    }

    /// The pipelines the last exec ran, taken (clix patch): see
    /// [`Bash::take_pipelines`](crate::Bash::take_pipelines).
    pub fn take_pipelines(&mut self) -> Vec<PipelineStatus> {
        self.pipeline_log.take()
    }

    /// THREAT[TM-ISO-005/006/007]: Reset per-exec transient state.
    /// Called by Bash::exec() before each top-level execution to prevent
    /// traps, exit code, `set` options, transient stdin, and fd3+ redirect
    /// capture buffers from leaking across calls.
    /// `shopt` options (expand_aliases, extglob, etc.) are intentionally
    /// preserved — they are persistent session configuration.
    pub fn reset_transient_state(&mut self) {
        self.memory_limit_error = None;
        // A new log: a job the last exec left running records into its own.
        self.pipeline_log = Arc::default();
        self.nofork = Arc::default();
        self.nofork_now = false;
        self.traps_mut().clear();
        self.last_exit_code = 0;
        // THREAT[TM-DOS-035/057]: A timeout can drop execution while a trap
        // handler is awaited; clear the re-entrancy guard before each exec so
        // one cancelled script cannot suppress traps in the next script.
        self.in_trap = false;
        self.trap_nesting = 0;
        self.trap_depth_error = None;
        self.err_trap_dormant = false;
        self.debug_trap_dormant = false;
        self.err_trap_skip_stage = false;
        self.line_base = 0;
        self.xtrace_depth = 0;
        // An exec that failed mid-command must not hand its queued `$(...)`
        // stderr to the next exec.
        self.subst_stderr = crate::StreamData::new();
        self.subst_stderr_held.clear();
        self.condition_sequence_depth = 0;
        self.loop_depth = 0;
        self.return_depth = 0;
        self.close_proc_sub_fds();
        self.clear_pending_fd_redirect_state();
        // Top-level timeouts drop the interpreter future at await points, so
        // BASH_SOURCE cleanup after script execution may not run. Reset both
        // the private stack and public array before reusing the Bash instance.
        self.bash_source_stack.clear();
        self.arrays_mut().remove("BASH_SOURCE");
        for var in Self::set_option_vars() {
            self.vars_mut().remove(var);
            if let Some(bit) = BashFlags::from_shopt_name(var) {
                self.flags.remove(bit);
            }
        }
        self.getopts_char_idx = 0;
        self.pipeline_stdin = None;
        self.clear_pipeline_streams();
        self.regex_cache = RuntimeRegexCache::default();
        self.bash_source_stack.clear();
        self.arrays_mut().remove("BASH_SOURCE");
    }

    // Called after a host-backed deadline drops the in-flight execution future.
    pub(crate) fn clear_cancelled_execution_state(&mut self) {
        self.reconcile_cancelled_execution_state(0, 0, 0, None);
        self.clear_pipeline_streams();
    }

    fn clear_pipeline_streams(&mut self) {
        self.pipe_in = None;
        self.pipe_out = None;
        self.builtin_stdin_pipe = None;
        self.builtin_stdout_pipe = None;
        self.stream_stdout_command = None;
    }

    fn clear_pending_fd_redirect_state(&mut self) {
        self.pending_fd_output.clear();
        self.pending_fd_targets.clear();
        self.pending_fd_capture_depth = 0;
    }

    fn append_pending_fd_output(&mut self, fd: i32, data: &crate::StreamData) {
        if data.is_empty() {
            return;
        }
        let used: usize = self
            .pending_fd_output
            .values()
            .map(crate::StreamData::len)
            .sum();
        let remaining = self.limits.max_stdout_bytes.saturating_sub(used);
        if remaining == 0 {
            return;
        }
        let entry = self.pending_fd_output.entry(fd).or_default();
        entry.append(&data.prefix(remaining));
    }

    /// Name `$0` expands to when no real script or function frame is active.
    pub(crate) const DEFAULT_ARG0: &'static str = "bash";

    /// Mark the shell interactive (REPL / terminal): diagnostics then read
    /// `bash: msg` instead of `bash: line N: msg`, as with `bash -i`.
    pub(crate) fn set_interactive(&mut self, interactive: bool) {
        self.interactive = interactive;
    }

    /// clix patch: see [`crate::Bash::set_flag_help`].
    pub(crate) fn set_flag_help(&mut self, help: FlagHelp) {
        self.flag_help = Some(help);
    }

    /// The name bash puts in front of a diagnostic: the file being read
    /// (`BASH_SOURCE[0]`, so a sourced file names itself), else `$0`. Mirrors
    /// bash's `get_name_for_error`.
    pub(crate) fn diag_name(&self) -> String {
        // THREAT[TM-DOS-103]: bound attacker-controlled names before copying.
        let name = if !self.interactive
            && let Some(src) = self.bash_source_stack.last().filter(|s| !s.file.is_empty())
        {
            &src.file
        } else if let Some(frame) = self.call_stack.iter().rev().find(|f| !f.keeps_arg0) {
            frame.name.as_str()
        } else {
            Self::DEFAULT_ARG0
        };
        let mut end = name.len().min(1024);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name[..end].to_string()
    }

    /// Prefix of a shell diagnostic: `$0: line N: ` (non-interactive bash),
    /// or `$0: ` in an interactive shell. Every interpreter-generated error
    /// goes through this; bundled builtins get it via
    /// [`prefix_builtin_diagnostics`].
    /// `msg` as a shell diagnostic: [`Self::diag_prefix`] followed by `msg`.
    pub(crate) fn diag(&self, msg: impl std::fmt::Display) -> String {
        format!("{}{msg}", self.diag_prefix())
    }

    /// `set -u` diagnostic for a bare `$name`: bash names a positional
    /// parameter `$N` there (but `3` in `${3}` and other braced forms).
    pub(crate) fn unbound_variable_diag(&self, name: &str) -> String {
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
            self.diag(format!("${name}: unbound variable\n"))
        } else {
            self.diag(format!("{name}: unbound variable\n"))
        }
    }

    pub(crate) fn diag_prefix(&self) -> String {
        if self.interactive {
            format!("{}: ", self.diag_name())
        } else {
            format!("{}: line {}: ", self.diag_name(), self.current_line)
        }
    }

    /// Current call-stack depth, used by the host `exec` boundary to restore
    /// the stack after installing per-invocation positional parameters.
    pub(crate) fn call_stack_len(&self) -> usize {
        self.call_stack.len()
    }

    /// Drop call frames above `len`. Used to remove the synthetic top-level
    /// frame created for per-invocation positional parameters, including on
    /// the error paths where the interpreter left frames behind.
    pub(crate) fn truncate_call_stack(&mut self, len: usize) {
        self.unwind_call_stack(len);
    }

    /// Install `$0` and positional parameters for a top-level execution.
    ///
    /// Mirrors what `execute_shell` does for `bash script.sh a b` and what the
    /// `set --` side effect does when the call stack is empty: positional
    /// parameters only exist in a call frame, so a synthetic one is pushed.
    /// The host `exec` boundary pops it again after execution.
    /// `name` is `$0`; `None` keeps the default shell name, matching bash where
    /// positional parameters can be set without changing `$0`.
    pub(crate) fn push_toplevel_positional(
        &mut self,
        name: Option<String>,
        positional: Vec<String>,
    ) {
        self.call_stack.push(CallFrame {
            name: name.unwrap_or_else(|| Self::DEFAULT_ARG0.to_string()),
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional,
            keeps_arg0: false,
        });
    }

    /// Seed the stdin a top-level command reads when it is not fed by a pipe
    /// or redirect. Must be called after `reset_transient_state`, which clears
    /// it between executions.
    pub(crate) fn set_pipeline_stdin(&mut self, stdin: crate::StreamData) {
        self.pipeline_stdin = Some(stdin);
    }

    /// Set an environment variable.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env_mut().insert(key.to_string(), value.to_string());
    }

    /// Install the last-chance command resolver (public API for builder).
    pub(crate) fn set_command_resolver(
        &mut self,
        resolver: Arc<dyn crate::builtins::CommandResolver>,
    ) {
        self.command_resolver = Some(resolver);
    }

    /// Set a shell variable (public API for builder).
    pub fn set_var(&mut self, key: &str, value: &str) {
        if let Some(bit) = BashFlags::from_shopt_name(key) {
            if value == "1" {
                self.flags.insert(bit);
            } else {
                self.flags.remove(bit);
            }
        }
        self.vars_mut().insert(key.to_string(), value.to_string());
    }

    /// Set the current working directory.
    pub fn set_cwd(&mut self, cwd: PathBuf) {
        self.cwd = cwd;
        if self.env.contains_key("PWD") {
            let pwd = self.cwd.to_string_lossy().into_owned();
            self.env_mut().insert("PWD".to_string(), pwd);
        }
    }

    /// `$empty cmd args`: the name word expanded to no fields, so the first
    /// argument field is the command. Boxed so this rare path stays off
    /// `execute_simple_command_body`'s frame (TM-DOS-089).
    fn vanished_name_args<'a>(
        &'a mut self,
        command: &'a SimpleCommand,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<VanishedName>> + Send + 'a>>
    {
        Box::pin(async move {
            let mut args = self.expand_command_args(command, false).await?.into_iter();
            Ok(args.next().map(|first| (first, args.collect())))
        })
    }

    /// Source text of an array binding's value, `(b b)`, for the
    /// environment of the command it prefixes.
    #[inline(never)]
    fn array_binding_env_text(words: &[Word]) -> String {
        let items: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        format!("({})", items.join(" "))
    }

    /// `cd`/`pushd`/`popd` write `PWD`/`OLDPWD` through `ctx.variables`;
    /// mirror them into the environment while they stay exported.
    #[inline(never)]
    fn sync_dir_exports(&mut self) {
        for name in ["PWD", "OLDPWD"] {
            let Some(value) = self.scoped.variables.get(name) else {
                continue;
            };
            if self.env.get(name) == Some(value)
                || !self.var_attrs_get(name).contains(VarAttrs::EXPORT)
            {
                continue;
            }
            let value = value.clone();
            self.env_mut().insert(name.to_string(), value);
        }
    }

    /// Get the current working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Record a history entry for the current session.
    pub fn record_history(
        &mut self,
        command: String,
        timestamp: i64,
        cwd: String,
        exit_code: i32,
        duration_ms: u64,
    ) {
        self.push_history_entry(HistoryEntry {
            command,
            timestamp,
            cwd,
            exit_code,
            duration_ms,
        });
    }

    fn push_history_entry(&mut self, entry: HistoryEntry) {
        // THREAT[TM-DOS-094]: Long-lived Bash instances retain history across
        // exec() calls. Enforce entry/byte caps before persistence or listing.
        if self.limits.max_history_entries == 0 || self.limits.max_history_bytes == 0 {
            return;
        }

        let entry_bytes = entry.retained_bytes();
        if entry_bytes > self.limits.max_history_bytes {
            return;
        }

        self.history_bytes = self.history_bytes.saturating_add(entry_bytes);
        self.history.push(entry);
        if self.trim_history_to_limits() {
            self.history_needs_rewrite = true;
        }
    }

    fn trim_history_to_limits(&mut self) -> bool {
        // Evict oldest-first. Compute how many leading entries to drop for both
        // the entry-count and byte budgets, then remove them in a single
        // `drain` instead of repeated `remove(0)` calls (each of which shifts
        // the whole vector), so trimming a batch is O(n) rather than O(n*k).
        let len = self.history.len();
        let mut drop_count = len.saturating_sub(self.limits.max_history_entries);
        let mut freed_bytes: usize = self.history[..drop_count]
            .iter()
            .map(|e| e.retained_bytes())
            .sum();
        while drop_count < len
            && self.history_bytes.saturating_sub(freed_bytes) > self.limits.max_history_bytes
        {
            freed_bytes = freed_bytes.saturating_add(self.history[drop_count].retained_bytes());
            drop_count += 1;
        }

        if drop_count == 0 {
            return false;
        }

        self.history.drain(..drop_count);
        self.history_bytes = self.history_bytes.saturating_sub(freed_bytes);
        self.history_saved_entries = self.history_saved_entries.saturating_sub(drop_count);
        if self.history.is_empty() {
            self.history_bytes = 0;
        }
        true
    }

    /// Set the VFS path for persisting history.
    pub fn set_history_file(&mut self, path: PathBuf) {
        self.history_file = Some(path);
    }

    /// Get a reference to the history entries.
    #[allow(dead_code)]
    pub fn history(&self) -> &[HistoryEntry] {
        &self.history
    }

    /// Clear all history entries and reset persistence accounting.
    pub fn clear_history(&mut self) {
        self.history.clear();
        self.history_bytes = 0;
        self.history_saved_entries = 0;
        self.history_needs_rewrite = true;
    }

    /// Load history from the VFS history file (if configured). No-op after first call.
    pub async fn load_history(&mut self) {
        if self.history_loaded {
            return;
        }
        self.history_loaded = true;
        let path = match &self.history_file {
            Some(p) => p.clone(),
            None => return,
        };
        let bytes = match self.fs.read_file(&path).await {
            Ok(b) => b,
            Err(_) => return, // File doesn't exist yet
        };
        let content = String::from_utf8_lossy(&bytes);
        for line in content.lines() {
            // Format: timestamp|exit_code|duration_ms|cwd|command
            let parts: Vec<&str> = line.splitn(5, '|').collect();
            if parts.len() == 5
                && let (Ok(ts), Ok(ec), Ok(dur)) = (
                    parts[0].parse::<i64>(),
                    parts[1].parse::<i32>(),
                    parts[2].parse::<u64>(),
                )
            {
                let before = self.history.len();
                self.push_history_entry(HistoryEntry {
                    timestamp: ts,
                    exit_code: ec,
                    duration_ms: dur,
                    cwd: parts[3].to_string(),
                    command: parts[4].to_string(),
                });
                if self.history.len() == before {
                    self.history_needs_rewrite = true;
                }
            }
        }
        self.history_saved_entries = self.history.len();
    }

    /// Save history to the VFS history file (if configured).
    pub async fn save_history(&mut self) {
        let path = match &self.history_file {
            Some(p) => p.clone(),
            None => return,
        };
        if let Some(parent) = path.parent() {
            let _ = self.fs.mkdir(parent, true).await;
        }

        if self.history_needs_rewrite || self.history_saved_entries > self.history.len() {
            let content = format_history_entries(&self.history);
            // Only advance persistence accounting when the write succeeds. On a
            // transient FS error keep `history_needs_rewrite` set so the next
            // save retries a full rewrite instead of silently dropping deltas.
            if self.fs.write_file(&path, content.as_bytes()).await.is_ok() {
                self.history_saved_entries = self.history.len();
                self.history_needs_rewrite = false;
            } else {
                self.history_needs_rewrite = true;
            }
            return;
        }

        if self.history_saved_entries < self.history.len() {
            let content = format_history_entries(&self.history[self.history_saved_entries..]);
            if self.fs.append_file(&path, content.as_bytes()).await.is_ok() {
                self.history_saved_entries = self.history.len();
            } else {
                // Append failed: force a full rewrite next time so the missed
                // delta is not lost.
                self.history_needs_rewrite = true;
            }
        }
    }

    /// Capture the current shell state (variables, env, cwd, options).
    pub fn shell_state(&self) -> ShellState {
        self.shell_state_with_options(ShellStateOptions::default())
    }

    pub(crate) fn shell_state_with_options(&self, options: ShellStateOptions) -> ShellState {
        // Deref through Arc and clone the inner HashMap for the public
        // ShellState struct (which holds plain HashMaps so users can mutate
        // it freely).
        ShellState {
            env: (*self.env).clone(),
            variables: (*self.scoped.variables).clone(),
            var_attrs: self
                .scoped
                .var_attrs
                .iter()
                .map(|(name, attrs)| (name.clone(), attrs.bits()))
                .collect(),
            namerefs: (*self.scoped.namerefs).clone(),
            arrays: (*self.scoped.arrays).clone(),
            assoc_arrays: (*self.scoped.assoc_arrays).clone(),
            cwd: self.cwd.clone(),
            last_exit_code: self.last_exit_code,
            last_bg_pid: self.last_bg_pid.clone(),
            functions: if options.include_functions {
                (*self.scoped.functions).clone()
            } else {
                HashMap::new()
            },
            aliases: (*self.scoped.aliases).clone(),
            traps: (*self.scoped.traps).clone(),
            dir_stack: (*self.scoped.dir_stack).clone(),
        }
    }

    /// Capture a lightweight shell-state view for prompt/UI inspection.
    pub fn shell_state_view(&self) -> ShellStateView {
        ShellStateView {
            env: (*self.env).clone(),
            variables: (*self.scoped.variables).clone(),
            arrays: (*self.scoped.arrays).clone(),
            assoc_arrays: (*self.scoped.assoc_arrays).clone(),
            cwd: self.cwd.clone(),
            last_exit_code: self.last_exit_code,
            aliases: (*self.scoped.aliases).clone(),
            traps: (*self.scoped.traps).clone(),
        }
    }

    /// Restore shell state from a snapshot.
    pub fn restore_shell_state(&mut self, state: &ShellState) {
        self.env = Arc::new(state.env.clone());
        let mut restored_variables = state.variables.clone();
        let mut restored_var_attrs: HashMap<String, VarAttrs> = state
            .var_attrs
            .iter()
            .map(|(name, bits)| (name.clone(), VarAttrs::from_bits_truncate(*bits)))
            .collect();
        let mut restored_namerefs = state.namerefs.clone();
        self.migrate_legacy_attr_markers(
            &mut restored_variables,
            &mut restored_var_attrs,
            &mut restored_namerefs,
        );
        self.scoped.variables = Arc::new(restored_variables);
        self.scoped.var_attrs = Arc::new(restored_var_attrs);
        self.scoped.namerefs = Arc::new(restored_namerefs);
        self.refresh_shopt_flags();
        self.scoped.arrays = Arc::new(state.arrays.clone());
        self.scoped.assoc_arrays = Arc::new(state.assoc_arrays.clone());
        self.cwd = state.cwd.clone();
        self.last_exit_code = state.last_exit_code;
        self.last_bg_pid = state.last_bg_pid.clone();
        // THREAT[TM-DOS-061]: Re-parse and budget-check restored functions so
        // snapshots cannot bypass parser/memory limits via serialized AST.
        let mut restored_functions = HashMap::new();
        let mut function_memory_budget = crate::limits::MemoryBudget::default();
        let mut function_names = state.functions.keys().cloned().collect::<Vec<_>>();
        function_names.sort_unstable();
        for name in function_names {
            let Some(snapshot_func) = state.functions.get(&name) else {
                continue;
            };
            let Some(source) = snapshot_func.source.as_deref() else {
                continue;
            };
            let Ok(parsed_func) = deserialize_function_from_source_with_limits(
                &name,
                source,
                self.limits.max_ast_depth,
                self.limits.max_parser_operations,
            ) else {
                continue;
            };
            let body_bytes = function_storage_bytes(&parsed_func);
            if function_memory_budget
                .check_function_insert(body_bytes, true, 0, &self.memory_limits)
                .is_err()
            {
                continue;
            }
            function_memory_budget.record_function_insert(body_bytes, true, 0);
            restored_functions.insert(name, parsed_func);
        }
        self.scoped.functions = Arc::new(restored_functions);
        // ShellState persists function source, but has no definition filenames.
        // Discard old metadata together with the replaced function map.
        self.scoped.function_files = Arc::default();
        self.scoped.aliases = Arc::new(state.aliases.clone());
        self.scoped.traps = Arc::new(state.traps.clone());
        self.scoped.dir_stack = Arc::new(state.dir_stack.clone());
        self.getopts_char_idx = 0;
        // Recompute memory budget from restored state to prevent desync
        let func_count = self.scoped.functions.len();
        let func_bytes: usize = self
            .scoped
            .functions
            .values()
            .map(function_storage_bytes)
            .sum();
        self.memory_budget = crate::limits::MemoryBudget::recompute_from_state(
            &self.scoped.variables,
            &self.scoped.arrays,
            &self.scoped.assoc_arrays,
            func_count,
            func_bytes,
            Self::is_internal_variable,
        );
        // Keep live budget consistent with validate_shell_state_restore_limits,
        // which counts the restored `$!` toward variable bytes.
        if let Some(last_bg_pid) = &self.last_bg_pid {
            self.memory_budget.variable_bytes = self
                .memory_budget
                .variable_bytes
                .saturating_add(last_bg_pid.len());
        }
    }

    fn migrate_legacy_attr_markers(
        &self,
        variables: &mut HashMap<String, String>,
        var_attrs: &mut HashMap<String, VarAttrs>,
        namerefs: &mut HashMap<String, String>,
    ) {
        // Preserve marker values: legacy `_NAMEREF_<name>` stores its target in the value.
        fn take_prefixed(
            variables: &mut HashMap<String, String>,
            prefix: &str,
        ) -> Vec<(String, String)> {
            let markers = variables
                .keys()
                .filter_map(|key| {
                    key.strip_prefix(prefix)
                        .map(|stripped| (key.clone(), stripped.to_string()))
                })
                .collect::<Vec<_>>();
            markers
                .into_iter()
                .filter_map(|(marker_key, stripped)| {
                    variables.remove(&marker_key).map(|value| (stripped, value))
                })
                .collect()
        }

        for (key, _) in take_prefixed(variables, "_READONLY_") {
            var_attrs
                .entry(key)
                .and_modify(|attrs| attrs.insert(VarAttrs::READONLY))
                .or_insert(VarAttrs::READONLY);
        }
        for (key, _) in take_prefixed(variables, "_INTEGER_") {
            var_attrs
                .entry(key)
                .and_modify(|attrs| attrs.insert(VarAttrs::INTEGER))
                .or_insert(VarAttrs::INTEGER);
        }
        for (key, _) in take_prefixed(variables, "_LOWER_") {
            var_attrs
                .entry(key)
                .and_modify(|attrs| attrs.insert(VarAttrs::LOWER))
                .or_insert(VarAttrs::LOWER);
        }
        for (key, _) in take_prefixed(variables, "_UPPER_") {
            var_attrs
                .entry(key)
                .and_modify(|attrs| attrs.insert(VarAttrs::UPPER))
                .or_insert(VarAttrs::UPPER);
        }
        for (key, target) in take_prefixed(variables, "_NAMEREF_") {
            namerefs.entry(key).or_insert(target);
        }
    }

    /// Validate restored shell state against configured memory limits.
    ///
    /// Used by snapshot restore paths before applying untrusted state.
    pub(crate) fn validate_shell_state_restore_limits(&self, state: &ShellState) -> Result<()> {
        // THREAT[TM-DOS-061]: typed snapshot state must obey the same dirstack
        // DoS bounds as pushd; otherwise forged snapshots bypass runtime growth
        // limits before dirs/format_stack allocate output.
        if state.dir_stack.len() > crate::builtins::limits::DIRSTACK_MAX_SIZE {
            return Err(crate::limits::LimitExceeded::Memory(format!(
                "directory stack entry limit ({}) exceeded",
                crate::builtins::limits::DIRSTACK_MAX_SIZE
            ))
            .into());
        }
        for dir in &state.dir_stack {
            if dir.len() > crate::builtins::limits::DIRSTACK_MAX_ENTRY_BYTES {
                return Err(crate::limits::LimitExceeded::Memory(format!(
                    "directory stack entry byte limit ({}) exceeded",
                    crate::builtins::limits::DIRSTACK_MAX_ENTRY_BYTES
                ))
                .into());
            }
            if dir.contains('\0') {
                return Err(crate::limits::LimitExceeded::Memory(
                    "directory stack entry contains NUL".to_string(),
                )
                .into());
            }
        }

        if let Some(last_bg_pid) = &state.last_bg_pid
            && (last_bg_pid.is_empty()
                || last_bg_pid.len() > Self::MAX_RESTORED_LAST_BG_PID_LEN
                || !last_bg_pid.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(crate::limits::LimitExceeded::Memory(
                "invalid restored last background pid".to_string(),
            )
            .into());
        }

        let mut budget = crate::limits::MemoryBudget::recompute_from_state(
            &state.variables,
            &state.arrays,
            &state.assoc_arrays,
            0,
            0,
            Self::is_internal_variable,
        );
        if let Some(last_bg_pid) = &state.last_bg_pid {
            budget.variable_bytes = budget.variable_bytes.saturating_add(last_bg_pid.len());
        }

        if budget.variable_count > self.memory_limits.max_variable_count {
            return Err(crate::limits::LimitExceeded::Memory(format!(
                "variable count limit ({}) exceeded",
                self.memory_limits.max_variable_count
            ))
            .into());
        }
        if budget.variable_bytes > self.memory_limits.max_total_variable_bytes {
            return Err(crate::limits::LimitExceeded::Memory(format!(
                "variable byte limit ({}) exceeded",
                self.memory_limits.max_total_variable_bytes
            ))
            .into());
        }
        if budget.array_entries > self.memory_limits.max_array_entries {
            return Err(crate::limits::LimitExceeded::Memory(format!(
                "array entry limit ({}) exceeded",
                self.memory_limits.max_array_entries
            ))
            .into());
        }

        Ok(())
    }

    /// Get a reference to the current execution counters.
    pub fn counters(&self) -> &crate::limits::ExecutionCounters {
        &self.counters
    }

    /// Merge session-level counters from a snapshot without lowering live usage.
    pub fn restore_session_counters(&mut self, session_commands: u64, session_exec_calls: u64) {
        self.counters.session_commands = self.counters.session_commands.max(session_commands);
        self.counters.session_exec_calls = self.counters.session_exec_calls.max(session_exec_calls);
    }

    /// Set an output callback for streaming output during execution.
    ///
    /// When set, the interpreter calls this callback with `(stdout_chunk, stderr_chunk)`
    /// after each loop iteration, command list element, and top-level command.
    /// Output is still accumulated in the returned `ExecResult` for the final result.
    pub fn set_output_callback(&mut self, callback: OutputCallback) {
        self.output_callback = Some(callback);
        self.output_emit_count = 0;
        self.output_stream_stdout_bytes = 0;
        self.output_stream_stderr_bytes = 0;
    }

    /// Clear the output callback.
    pub fn clear_output_callback(&mut self) {
        self.output_callback = None;
        self.output_emit_count = 0;
        self.output_stream_stdout_bytes = 0;
        self.output_stream_stderr_bytes = 0;
    }

    /// Emit output via the callback if set, and if sub-calls didn't already emit.
    /// Returns `true` if output was emitted.
    ///
    /// `emit_count_before` is the value of `output_emit_count` before the sub-call
    /// that produced this output. If the count advanced, sub-calls already emitted
    /// and we skip to avoid duplicates.
    fn maybe_emit_output<'a>(
        &'a mut self,
        stdout: &'a crate::StreamData,
        stderr: &'a crate::StreamData,
        emit_count_before: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool>> + Send + 'a>> {
        // Nothing to emit: no future to build (clix patch, "a builtin's
        // fixed costs"; empty output emits nothing below either).
        if self.output_callback.is_none()
            || self.output_emit_count != emit_count_before
            || (stdout.is_empty() && stderr.is_empty())
        {
            return Box::pin(std::future::ready(Ok(false)));
        }
        Box::pin(async move {
            // `exec >log` / `exec 2>/dev/null`: the shell's own output is routed
            // at the top-level command (`route_exec_output`), not streamed. A
            // pipeline stage's sink is a pipe, never the caller.
            let (stdout, stderr) = if self.pipe_out.is_none() {
                let empty = crate::StreamData::new();
                (
                    if self.exec_fd_table.contains_key(&1) {
                        empty.clone()
                    } else {
                        stdout.clone()
                    },
                    if self.exec_fd_table.contains_key(&2) {
                        empty
                    } else {
                        stderr.clone()
                    },
                )
            } else {
                (stdout.clone(), stderr.clone())
            };
            let (stdout, stderr) = (&stdout, &stderr);

            let stdout_remaining = self
                .limits
                .max_stdout_bytes
                .saturating_sub(self.output_stream_stdout_bytes);
            let stderr_remaining = self
                .limits
                .max_stderr_bytes
                .saturating_sub(self.output_stream_stderr_bytes);
            // A stage's pipe is not caller-visible output: no stdout cap.
            let output = self.execution_output().filter(|_| self.pipe_out.is_none());
            let stdout_chunk = if self.pipe_out.is_some() || output.is_some() {
                stdout.clone()
            } else {
                stdout.prefix(stdout_remaining)
            };
            let stderr_chunk = if output.is_some() {
                stderr.clone()
            } else {
                stderr.prefix(stderr_remaining)
            };
            if stdout_chunk.is_empty() && stderr_chunk.is_empty() {
                return Ok(false);
            }

            let delivery = async {
                if let Some(output) = output {
                    self.execution_budget
                        .run(output.stdout.write_bounded(stdout_chunk.as_bytes()))
                        .await??;
                    self.execution_budget
                        .run(output.stderr.write_bounded(stderr_chunk.as_bytes()))
                        .await??;
                } else if let Some(pipe) = &self.pipe_out {
                    self.execution_budget
                        .run(pipe.write_bounded(stdout_chunk.as_bytes()))
                        .await??;
                }
                Ok::<_, crate::Error>(())
            }
            .await;
            if let Err(error) = delivery {
                if self.pipe_out.is_some()
                    && matches!(&error, crate::Error::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
                {
                    return Ok(true);
                }
                return Err(error);
            }
            if let Some(ref mut cb) = self.output_callback {
                if self.pipe_out.is_none() {
                    cb(&stdout_chunk, &stderr_chunk);
                }
                self.output_emit_count += 1;
                self.output_stream_stdout_bytes += stdout_chunk.len();
                self.output_stream_stderr_bytes += stderr_chunk.len();
            }
            Ok(true)
        })
    }

    /// Set the HTTP client for network builtins (curl, wget).
    ///
    /// This is only available when the `http_client` feature is enabled.
    #[cfg(feature = "http_client")]
    pub fn set_http_client(&mut self, client: crate::network::HttpClient) {
        self.http_client = Some(Arc::new(client));
    }

    /// Get a mutable reference to the HTTP client (for setting hooks after build).
    #[cfg(feature = "http_client")]
    pub(crate) fn http_client_mut(&mut self) -> Option<&mut crate::network::HttpClient> {
        self.http_client.as_mut().and_then(Arc::get_mut)
    }

    /// Set the git client for git builtins.
    ///
    /// This is only available when the `git` feature is enabled.
    #[cfg(feature = "git")]
    pub fn set_git_client(&mut self, client: crate::builtins::git::GitClient) {
        self.git_client = Some(Arc::new(client));
    }

    /// Set the SSH client for ssh/scp/sftp builtins.
    ///
    /// This is only available when the `ssh` feature is enabled.
    #[cfg(feature = "ssh")]
    pub fn set_ssh_client(&mut self, client: crate::builtins::ssh::SshClient) {
        self.ssh_client = Some(Arc::new(client));
    }

    /// Execute a script.
    pub async fn execute(&mut self, script: &Script) -> Result<ExecResult> {
        // Note: Bash::exec() resets per-exec counters and counts the session
        // invocation before parsing, so parse/budget failures also consume the
        // max_exec_calls budget. Internal callers of Interpreter::execute() do
        // not represent host-level exec() invocations.

        let result = {
            let jobs = Arc::clone(&self.jobs);
            let mut result =
                jobs::with_jobs(&jobs, self.execute_script_body(script, true, true)).await;
            // Script boundary: background jobs are scoped to a single exec()
            // call. Like a pipe reader waiting for EOF, the call waits for
            // every job and delivers output not yet reported. Coprocs first
            // lose the shell's ends, as when a script exits.
            self.close_coprocs();
            jobs.finish_all().await;
            let (out, err) = jobs.lock().take_finished_output();
            // Jobs completing after the last command boundary still owe their
            // output to live sinks. Drain before closing the execution writers;
            // keep cleanup unconditional when delivery fails.
            let emission = if result.is_ok()
                && self.output_callback.is_some()
                && (!out.is_empty() || !err.is_empty())
            {
                self.maybe_emit_output(&out, &err, self.output_emit_count)
                    .await
                    .map(|_| ())
            } else {
                Ok(())
            };
            if self.retain_streamed_output()
                && let Ok(r) = &mut result
            {
                r.stdout.append(&out);
                r.stderr.append(&err);
            }
            jobs.lock().clear();
            if let Some(error) = &self.memory_limit_error {
                Err(crate::error::Error::ResourceLimit(error.clone()))
            } else {
                emission.and(result)
            }
        };

        if result.is_err() {
            // THREAT[TM-INF-019]: Trace events are per exec() result data.
            // Error paths have no ExecResult to carry them, so discard them before
            // a reused Bash instance can expose stale events to the next caller.
            let _ = self.trace.take_events();
        }

        result
    }

    /// Close every process substitution fd still open (one opened by a
    /// compound command's words, or left by an aborted command).
    /// Called from Bash::exec() after execute() returns.
    pub(crate) fn close_proc_sub_fds(&mut self) {
        self.proc_subs.close_from(0);
        self.deferred_proc_subs.clear();
    }

    /// Inner script execution — runs commands without resetting counters.
    /// Used by `execute_source` and nested shell contexts.
    /// `run_exit_trap`: whether this shell context runs its EXIT trap.
    /// `fire_exit_hook`: whether `exit` notifies host-level on_exit hooks.
    /// bash parses a script a line at a time, so `alias x=...` or
    /// `shopt -s extglob` on one line changes how the next lines parse.
    /// When those options differ from the ones `view` was parsed with and
    /// command `index` starts a new line, re-read the rest of the source
    /// from there with the current options.
    #[inline(never)]
    fn reread_script_rest(
        &mut self,
        view: &mut ScriptView<'_>,
        index: &mut usize,
        parsed_with: &mut crate::parser::ParseOptions,
    ) -> Result<()> {
        let script = view.get();
        let Some(source) = script.source.clone() else {
            return Ok(());
        };
        // Past the last command `command_starts` may hold where a syntax
        // error stopped the parse: that rest is re-read too.
        let Some(&(offset, line)) = script.command_starts.get(*index) else {
            return Ok(());
        };
        let prev_end = script
            .command_end_lines
            .get(index.saturating_sub(1))
            .copied()
            .unwrap_or(0);
        if line <= prev_end {
            return Ok(());
        }
        let now = self.parse_options();
        if now == *parsed_with {
            return Ok(());
        }
        let Some(rest) = source.get(offset..) else {
            return Ok(());
        };
        // THREAT[TM-DOS-030]: Propagate interpreter parser limits
        let (mut reread, err) = Parser::with_limits(
            rest,
            self.limits.max_ast_depth,
            self.limits.max_parser_operations,
        )
        .with_execution_budget(self.execution_budget.clone())
        .with_options(now.clone())
        .starting_at_line(line)
        .parse_recovering();
        // The syntax error keeps the `who:` its first report used.
        let who = script
            .trailing_error
            .as_deref()
            .and_then(|m| m.split_once(": line ").map(|(w, _)| w.to_string()))
            .unwrap_or_else(|| self.diag_name());
        match err {
            None => {}
            Some(e @ crate::error::Error::Parse { .. }) => {
                reread.trailing_error = Some(
                    e.syntax_report(&who, &source)
                        .unwrap_or_else(|| format!("{who}: syntax error: {e}\n")),
                );
            }
            Some(e) => return Err(e),
        }
        // THREAT[TM-DOS-031]: the re-read text (aliases expanded) gets the
        // static budget check the first parse got; over budget, the rest
        // of the script is refused with a diagnostic, like a syntax error.
        if let Err(e) = crate::parser::validate_budget(&reread, &self.limits) {
            reread.commands.clear();
            reread.command_end_lines.clear();
            reread.command_starts.clear();
            reread.trailing_error = Some(self.diag(format!("budget validation failed: {e}\n")));
        }
        for start in &mut reread.command_starts {
            start.0 += offset;
        }
        reread.source = Some(source);
        let reread = Box::new(reread);
        if let Some(reader) = self.line_reader.as_mut() {
            reader.retarget(view.get(), &reread);
        }
        *view = ScriptView::Reread(reread);
        *index = 0;
        *parsed_with = now;
        Ok(())
    }

    /// Bookkeeping before command `index` of a script body runs: a
    /// `(( ))`/`[[ ]]` there takes `$LINENO` from where it starts (the AST
    /// node has no span), and under `set -v` a shell's top level echoes the
    /// source lines read for it (bash prints each line as it reads it).
    #[inline(never)]
    fn before_body_command(
        &mut self,
        script: &Script,
        index: usize,
        command: &Command,
        top_level: bool,
    ) -> Option<crate::StreamData> {
        let start = script.command_starts.get(index).copied();
        if let Some((_, line)) = start
            && matches!(
                command,
                Command::Compound(
                    CompoundCommand::Arithmetic(_) | CompoundCommand::Conditional(_),
                    _
                )
            )
        {
            self.current_line = self.line_at(line);
        }
        if !top_level || !self.flags.contains(BashFlags::VERBOSE) {
            return None;
        }
        let (_, line) = start?;
        let source = script.source.as_deref()?;
        let prev_end = index
            .checked_sub(1)
            .and_then(|i| script.command_end_lines.get(i).copied())
            .unwrap_or(0);
        if line <= prev_end {
            return None;
        }
        let end = script.command_end_lines.get(index).copied().unwrap_or(line);
        // A re-read rest starts over at index 0: begin at its own line.
        let first = if index == 0 { line } else { prev_end + 1 };
        let mut text = String::new();
        for (n, l) in source.split_inclusive('\n').enumerate() {
            let n = n + 1;
            if n > end {
                break;
            }
            if n >= first {
                text.push_str(l);
            }
        }
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        (!text.is_empty()).then(|| text.into())
    }

    /// Emit `set -v` echoed lines as the shell's own stderr: through any
    /// `exec 2>...` target, merged into stdout when fd 2 joins fd 1.
    /// Boxed so the script body loop's frame stays small (TM-DOS-089).
    #[inline(never)]
    fn route_verbose_echo(
        &mut self,
        echo: crate::StreamData,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + '_>> {
        Box::pin(async move {
            let mut result = ExecResult {
                stderr: echo,
                ..ExecResult::default()
            };
            let emitted = (
                self.output_stream_stdout_bytes,
                self.output_stream_stderr_bytes,
            );
            self.route_exec_output(&mut result, emitted, (0, 0), None)
                .await?;
            if self.merge_stderr {
                Self::merge_stderr_into_stdout(&mut result);
            }
            let emit_before = self.output_emit_count;
            self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                .await?;
            Box::pin(self.flush_exec_passthrough(&mut result)).await?;
            Ok(result)
        })
    }

    /// Parse shell text (a trap, `$(...)` in arithmetic, a sourced script)
    /// under the shell's limits, budget and alias/extglob options. Kept out
    /// of line so the async callers' frames hold no `Parser` (TM-DOS-089).
    #[inline(never)]
    fn parse_shell_text(&self, text: &str) -> Result<Script> {
        Parser::with_limits(
            text,
            self.limits.max_ast_depth,
            self.limits.max_parser_operations,
        )
        .with_execution_budget(self.execution_budget.clone())
        .with_options(self.parse_options())
        .parse()
    }

    async fn execute_script_body(
        &mut self,
        script: &Script,
        run_exit_trap: bool,
        fire_exit_hook: bool,
    ) -> Result<ExecResult> {
        self.script_depth += 1;
        // Boxed so this wrapper adds no stack per nested `$(...)` level.
        let result =
            Box::pin(self.execute_script_body_inner(script, run_exit_trap, fire_exit_hook)).await;
        self.script_depth -= 1;
        result
    }

    async fn execute_script_body_inner(
        &mut self,
        script: &Script,
        run_exit_trap: bool,
        fire_exit_hook: bool,
    ) -> Result<ExecResult> {
        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        let mut exit_code = 0;
        let mut stdout_truncated = false;
        let mut stderr_truncated = false;
        let retain_output = self.retain_streamed_output();
        let max_stdout = self.limits.max_stdout_bytes;
        let max_stderr = self.limits.max_stderr_bytes;

        let mut stopped = false;
        let top_level = self.script_depth == 1;
        // Line of a command that aborted (bash DISCARD): the rest of that
        // line is skipped and the shell resumes at the next one.
        let mut aborted_line: Option<usize> = None;
        let mut propagate_abort = false;
        let mut propagated_flow = ControlFlow::None;
        // The script being run: as parsed, or its rest re-read after an
        // `alias`/`shopt -s extglob` changed how the next lines parse.
        let mut view = ScriptView::Parsed(script);
        let mut parsed_with = Box::new(self.parse_options());
        let mut next_index = 0;
        loop {
            if next_index > 0 {
                self.reread_script_rest(&mut view, &mut next_index, &mut parsed_with)?;
            }
            let script = view.get();
            let Some(command) = script.commands.get(next_index) else {
                break;
            };
            let index = next_index;
            next_index += 1;
            if aborted_line == Some(Self::command_start_line(command)) {
                continue;
            }
            if run_exit_trap
                && self.line_reader.is_some()
                && let history::LineWork::Async =
                    self.top_level_line(script, index, Self::command_start_line(command))
            {
                let (out, err) = self.top_level_line_async(false).await;
                stdout.append(&out);
                stderr.append(&err);
            }
            self.check_cancelled()?;
            if let Some(echo) = self.before_body_command(script, index, command, run_exit_trap) {
                let echo = self.route_verbose_echo(echo).await?;
                stdout.append(&echo.stdout);
                stderr.append(&echo.stderr);
            }
            let emit_before = self.output_emit_count;
            let emitted_before = (
                self.output_stream_stdout_bytes,
                self.output_stream_stderr_bytes,
            );
            self.route_top_list = top_level && matches!(command, Command::List(_));
            self.top_list_routed = None;
            let result = self.execute_command(command).await;
            self.route_top_list = false;
            let list_routed = self.top_list_routed.take();
            let mut result = result?;
            if top_level {
                // Background jobs that finished meanwhile report here, as
                // bash prints their output while the script continues.
                let (out, err) = self.take_finished_job_output();
                result.stdout.append(&out);
                result.stderr.append(&err);
            }
            self.reap_coprocs();
            self.check_cancelled()?;
            if top_level {
                self.route_exec_output(
                    &mut result,
                    emitted_before,
                    list_routed.unwrap_or((0, 0)),
                    Self::command_name(command),
                )
                .await?;
            }
            if self.merge_stderr {
                Self::merge_stderr_into_stdout(&mut result);
            }
            self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                .await?;
            if top_level {
                Box::pin(self.flush_exec_passthrough(&mut result)).await?;
            }

            // Accumulate stdout with truncation
            if retain_output && !stdout_truncated {
                let remaining = max_stdout.saturating_sub(stdout.len());
                if remaining == 0 {
                    if !result.stdout.is_empty() {
                        stdout_truncated = true;
                    }
                } else if result.stdout.len() <= remaining {
                    stdout.append(&result.stdout);
                } else {
                    stdout.append(&result.stdout.prefix(remaining));
                    stdout_truncated = true;
                }
            }

            // Accumulate stderr with truncation
            if retain_output && !stderr_truncated {
                let remaining = max_stderr.saturating_sub(stderr.len());
                if remaining == 0 {
                    if !result.stderr.is_empty() {
                        stderr_truncated = true;
                    }
                } else if result.stderr.len() <= remaining {
                    stderr.append(&result.stderr);
                } else {
                    stderr.append(&result.stderr.prefix(remaining));
                    stderr_truncated = true;
                }
            }
            if !retain_output {
                stdout_truncated |= result.stdout_truncated;
            }
            stderr_truncated |= result.stderr_truncated;

            exit_code = result.exit_code;
            self.last_exit_code = exit_code;

            if result.control_flow == ControlFlow::Abort {
                // A shell's top level (script, `bash -c`) resumes at the next
                // line; `source`/`eval` bodies pass the abort to their caller.
                if run_exit_trap {
                    let end_line = script
                        .command_end_lines
                        .get(index)
                        .copied()
                        .unwrap_or_else(|| Self::command_start_line(command));
                    aborted_line = Some(end_line);
                    if std::mem::take(&mut self.builtin_discard)
                        && self.c_string_depth == self.script_depth
                    {
                        stopped = true;
                        break;
                    }
                    if top_level {
                        self.shift_lines_after_abort(end_line);
                    }
                    continue;
                }
                propagate_abort = true;
                stopped = true;
                break;
            }

            // Stop on control flow (e.g. nounset error uses Return to abort)
            if result.control_flow != ControlFlow::None {
                if let ControlFlow::Exit(code) = result.control_flow {
                    if !run_exit_trap {
                        // `exit` in a `source`/`eval` body ends the shell:
                        // the caller's top level runs the exit hooks.
                        propagated_flow = ControlFlow::Exit(code);
                        exit_code = code;
                        self.last_exit_code = code;
                        stopped = true;
                        break;
                    }
                    if fire_exit_hook {
                        if !self.hooks.on_exit.is_empty() {
                            self.execution_budget.consume_work(100)?;
                        }
                        match self.hooks.fire_on_exit(crate::hooks::ExitEvent { code }) {
                            Some(event) => {
                                exit_code = event.code;
                                self.last_exit_code = exit_code;
                                stopped = true;
                                break;
                            }
                            None => continue,
                        }
                    } else {
                        stopped = true;
                        break;
                    }
                } else {
                    // `return` ends a sourced file with its status;
                    // `break`/`continue`/`return` in a `source`/`eval`
                    // body act on the caller's loop or function.
                    if let ControlFlow::Return(code) = result.control_flow {
                        exit_code = code;
                        self.last_exit_code = code;
                    }
                    if !run_exit_trap {
                        propagated_flow = result.control_flow;
                    }
                    stopped = true;
                    break;
                }
            }

            // The ERR trap already ran in `execute_command`, after the
            // failing simple command, pipeline or `( )` itself.

            // errexit (set -e): stop on non-zero exit unless the callee marks
            // the status as suppressed (for example, a short-circuited AND-OR
            // list) or the command is an explicitly negated pipeline.
            // Lists are NOT suppressed here so set -e fires for failing lists.
            if self.errexit_active() && exit_code != 0 {
                let suppressed = matches!(command, Command::Pipeline(p) if p.negated)
                    || result.errexit_suppressed;
                if !suppressed {
                    stopped = true;
                    break;
                }
            }
        }

        // End of input of a `bash -i` child: one last PROMPT_COMMAND and prompt.
        if !stopped
            && run_exit_trap
            && self
                .line_reader
                .as_ref()
                .is_some_and(|r| r.interactive && r.reads(view.get()))
        {
            let (out, err) = self.top_level_line_async(true).await;
            stdout.append(&out);
            stderr.append(&err);
        }

        // Syntax error after the commands that ran: bash reads and runs a
        // script line by line, so it reports the error only on reaching it.
        if !stopped && let Some(message) = &view.get().trailing_error {
            let emit_before = self.output_emit_count;
            let err = crate::StreamData::from(message.clone());
            self.maybe_emit_output(&crate::StreamData::new(), &err, emit_before)
                .await?;
            if !stderr_truncated {
                stderr.append(&err);
            }
            exit_code = 2;
            self.last_exit_code = 2;
        }

        // Run EXIT trap if registered (only for top-level execute)
        #[allow(clippy::collapsible_if)]
        if run_exit_trap {
            if let Some(trap_cmd) = self.scoped.traps.get("EXIT").cloned() {
                // THREAT[TM-DOS-030]: Propagate interpreter parser limits
                if let Ok(trap_script) = self.parse_shell_text(&trap_cmd) {
                    let emit_before = self.output_emit_count;
                    if let Ok(trap_result) =
                        self.execute_command_sequence(&trap_script.commands).await
                    {
                        self.maybe_emit_output(
                            &trap_result.stdout,
                            &trap_result.stderr,
                            emit_before,
                        )
                        .await?;
                        stdout.append(&trap_result.stdout);
                        stderr.append(&trap_result.stderr);
                        // `exit N` in the handler is the shell's status.
                        if let ControlFlow::Exit(code) = trap_result.control_flow {
                            exit_code = code;
                            self.last_exit_code = code;
                        }
                    }
                }
            }
        }

        let final_env = if self.limits.capture_final_env {
            // THREAT[TM-INF-031]: final_env is a user-visible output channel.
            // Apply visibility filtering + output-byte cap to prevent marker leaks
            // and bypass of stdout/stderr output limits.
            let mut final_env = HashMap::new();
            let mut remaining = self.limits.max_stdout_bytes;
            let mut keys: Vec<&String> = self.scoped.variables.keys().collect();
            keys.sort_unstable();
            for key in keys {
                if is_hidden_variable(key) {
                    continue;
                }
                let Some(value) = self.scoped.variables.get(key) else {
                    continue;
                };
                let entry_bytes = key.len().saturating_add(value.len());
                if entry_bytes > remaining {
                    continue;
                }
                final_env.insert(key.clone(), value.clone());
                remaining = remaining.saturating_sub(entry_bytes);
                if remaining == 0 {
                    break;
                }
            }
            Some(final_env)
        } else {
            None
        };

        let events = self.trace.take_events();

        Ok(ExecResult {
            stdout,
            stderr,
            exit_code,
            control_flow: if propagate_abort {
                ControlFlow::Abort
            } else {
                propagated_flow
            },
            stdout_truncated,
            stderr_truncated,
            final_env,
            events,
            ..Default::default()
        })
    }

    /// Get the source line number from a command's span
    /// The name a simple command would report itself under in an error.
    fn command_name(command: &Command) -> Option<&str> {
        let Command::Simple(c) = command else {
            return None;
        };
        match c.name.parts.first()? {
            WordPart::Literal(name) => Some(name.as_str()),
            _ => None,
        }
    }

    /// Line a compound command ends on (`done`, `fi`, `esac`): bash reports
    /// a failing redirect of `while ...; done < file` there. `None` for the
    /// forms without a span.
    fn compound_end_line(compound: &CompoundCommand) -> Option<usize> {
        let span = match compound {
            CompoundCommand::If(cmd) => cmd.span,
            CompoundCommand::For(cmd) => cmd.span,
            CompoundCommand::ArithmeticFor(cmd) => cmd.span,
            CompoundCommand::While(cmd) => cmd.span,
            CompoundCommand::Until(cmd) => cmd.span,
            CompoundCommand::Case(cmd) => cmd.span,
            CompoundCommand::Select(cmd) => cmd.span,
            _ => return None,
        };
        Some(span.end.line.max(span.start.line))
    }

    fn command_line(command: &Command) -> usize {
        match command {
            Command::Simple(c) => c.span.line(),
            Command::Pipeline(c) => c.span.line(),
            Command::List(c) => c.span.line(),
            Command::Compound(c, _) => match c {
                CompoundCommand::If(cmd) => cmd.span.line(),
                CompoundCommand::For(cmd) => cmd.span.line(),
                CompoundCommand::ArithmeticFor(cmd) => cmd.span.line(),
                CompoundCommand::While(cmd) => cmd.span.line(),
                CompoundCommand::Until(cmd) => cmd.span.line(),
                CompoundCommand::Case(cmd) => cmd.span.line(),
                CompoundCommand::Select(cmd) => cmd.span.line(),
                CompoundCommand::Time(cmd) => cmd.span.line(),
                CompoundCommand::Coproc(cmd) => cmd.span.line(),
                CompoundCommand::Subshell(_) | CompoundCommand::BraceGroup(_) => 1,
                CompoundCommand::Arithmetic(_) | CompoundCommand::Conditional(_) => 1,
            },
            Command::Function(c) => c.span.line(),
        }
    }

    /// `$LINENO` of source line `line` under the current `line_base`.
    fn line_at(&self, line: usize) -> usize {
        usize::try_from(self.line_base.saturating_add_unsigned(line))
            .unwrap_or(1)
            .max(1)
    }

    /// bash quirk: a fatal error aborting a top-level command leaves the
    /// shell's line counter at the failing command's line, and the parser
    /// keeps counting from there. So every later line reads as
    /// `failing_line + (line - end_line)`, where `end_line` is the line the
    /// aborted command's terminator sits on (`for ...` / `echo $((1/0))` /
    /// `done` on three lines shifts the rest of the script back one line).
    // WTF: bash also shifts the lines of functions defined after the abort;
    // bashkit runs function bodies with their parse-time lines.
    fn shift_lines_after_abort(&mut self, end_line: usize) {
        let shift = self.line_at(end_line).saturating_sub(self.current_line);
        self.line_base = self.line_base.saturating_sub_unsigned(shift);
    }

    /// First source line of a command; `{ }` / `( )` record no span, so
    /// they use their first inner command's line.
    fn command_start_line(command: &Command) -> usize {
        match command {
            Command::Compound(
                CompoundCommand::BraceGroup(body) | CompoundCommand::Subshell(body),
                _,
            ) => body.first().map_or(1, Self::command_start_line),
            _ => Self::command_line(command),
        }
    }

    /// `$LINENO` for a command about to run. `(( ))` and `[[ ]]` carry no
    /// position of their own: they keep the line of the list around them
    /// (`[[ $LINENO -gt 1 ]] && ...`), not line 1.
    fn set_command_lineno(&mut self, command: &Command) {
        if !matches!(
            command,
            Command::Compound(
                CompoundCommand::Arithmetic(_) | CompoundCommand::Conditional(_),
                _
            )
        ) {
            self.current_line = self.line_at(Self::command_line(command));
        }
    }

    fn execute_command<'a>(
        &'a mut self,
        command: &'a Command,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // Whether ERR may fire after this command: bash decides before
            // running it, so a trap the command itself sets (`f` setting
            // ERR inside) does not fire for that same command.
            if self.counters.commands > 0
                && self.counters.commands.is_multiple_of(64)
                && self.execution_output().is_some()
            {
                crate::execution::yield_once().await;
            }
            let skip_stage = std::mem::take(&mut self.err_trap_skip_stage);
            let err_armed = !skip_stage && self.err_trap_armed() && Self::fires_err_trap(command);
            let emit_before = self.output_emit_count;
            self.check_cancelled()?;
            // Update current line for $LINENO
            self.set_command_lineno(command);
            if let Some(name) = Self::command_name(command) {
                self.last_command_name = name.to_string();
            }

            // `set -n`: read commands without running them for the rest of
            // this exec (bash does the same in scripts; nothing can undo it,
            // since `set +n` is not run either).
            if self.flags.contains(BashFlags::NOEXEC) {
                return Ok(ExecResult::ok(String::new()));
            }

            // Fail point: inject failures during command execution
            #[cfg(feature = "failpoints")]
            fail_point!("interp::execute_command", |action| {
                match action.as_deref() {
                    Some("panic") => {
                        // Test panic recovery
                        panic!("injected panic in execute_command");
                    }
                    Some("error") => {
                        return Err(Error::Execution("injected execution error".to_string()));
                    }
                    Some("exit_nonzero") => {
                        // Return non-zero exit code without error
                        return Ok(ExecResult {
                            stdout: crate::StreamData::new(),
                            stderr: "injected failure".into(),
                            exit_code: 127,
                            control_flow: ControlFlow::None,
                            ..Default::default()
                        });
                    }
                    _ => {}
                }
                Ok(ExecResult::ok(String::new()))
            });

            self.charge_command_execution()?;

            if self.pipe_out.is_some()
                && let Some(killed) = Box::pin(self.wait_for_pipe_room()).await
            {
                return Ok(killed);
            }

            let result = match command {
                Command::Simple(simple) => {
                    // One Result local (not `?` + a second ExecResult copy):
                    // this frame repeats per `$(...)` nesting level.
                    let result = self.execute_simple_command(simple, None).await;
                    if let Ok(r) = &result {
                        self.set_simple_pipestatus(r.exit_code);
                    }
                    result
                }
                Command::Pipeline(pipeline) if pipeline.negated => {
                    // `! cmd` is an errexit-ignored context, inside too. bash
                    // does it by clearing `set -e` for the pipeline, so a
                    // `set -e` run inside (`f() { set -e; false; }; ! f`)
                    // is live again.
                    let ignore = usize::from(self.is_errexit_enabled());
                    self.condition_sequence_depth += ignore;
                    self.errexit_fired = false;
                    let result = self.execute_pipeline(pipeline).await;
                    self.condition_sequence_depth -= ignore;
                    // Still on afterwards: not a subshell's own `set -e`.
                    let fired = std::mem::take(&mut self.errexit_fired)
                        && ignore == 0
                        && self.is_errexit_enabled();
                    result.map(|mut r| {
                        r.errexit_suppressed = true;
                        if fired {
                            // The failure that stopped the body ends the shell.
                            r.control_flow = ControlFlow::Exit(1 - r.exit_code.min(1));
                            r.exit_code = 1 - r.exit_code.min(1);
                        }
                        r
                    })
                }
                Command::Pipeline(pipeline) => self.execute_pipeline(pipeline).await,
                Command::List(list) => {
                    let route = std::mem::take(&mut self.route_top_list);
                    let result = self.execute_list(list, route).await;
                    if route && let Ok(r) = &result {
                        self.top_list_routed = Some((r.stdout.len(), r.stderr.len()));
                    }
                    result
                }
                Command::Compound(compound, redirects) => {
                    // Substitutions in its words or redirects (`for x in
                    // <(a)`, `done < <(b)`, `[[ -e <(c) ]]`) close with it.
                    let proc_sub_fds = self.proc_subs.open_count();
                    // Own frame: keeps this arm's temporaries off the stack
                    // of every `$(...)`/function nesting level.
                    let result = self
                        .execute_compound_with_redirects(compound, redirects)
                        .await;
                    self.proc_subs.close_from(proc_sub_fds);
                    // `( )`, `[[ ]]` and `(( ))` set PIPESTATUS to their own
                    // status like a simple command; other compounds leave
                    // the last inner command's (bash).
                    if let Ok(r) = &result
                        && matches!(
                            compound,
                            CompoundCommand::Subshell(_)
                                | CompoundCommand::Conditional(_)
                                | CompoundCommand::Arithmetic(_)
                        )
                    {
                        self.set_simple_pipestatus(r.exit_code);
                    }
                    result
                }
                Command::Function(func_def) => Ok(self.define_function(func_def)),
            };
            let mut result = result;
            self.settle_pending_subst_stderr(&mut result);
            let mut result = self.abort_line_on_error(result);
            if err_armed
                && let Ok(r) = &mut result
                && r.exit_code != 0
                && r.control_flow == ControlFlow::None
                && !r.errexit_suppressed
                && !self.is_in_condition_sequence()
            {
                // `$LINENO` in the handler is the failing command's line.
                self.set_command_lineno(command);
                Box::pin(self.run_err_trap_after(r, emit_before)).await;
            }
            result
        })
    }

    /// Queue stderr written inside `$(...)` for the command that expanded it
    /// (capped like any stderr: THREAT[TM-DOS-058]).
    fn queue_subst_stderr(&mut self, stderr: &crate::StreamData) {
        let room = self
            .limits
            .max_stderr_bytes
            .saturating_sub(self.subst_stderr.len());
        if !stderr.is_empty() && room > 0 {
            self.subst_stderr.append(&stderr.prefix(room));
        }
    }

    /// Emit queued `$(...)` stderr ahead of the command's own. On error it
    /// stays queued for the next command boundary.
    fn settle_subst_stderr(&mut self, queued: crate::StreamData, result: &mut Result<ExecResult>) {
        if queued.is_empty() {
            return;
        }
        match result {
            // fd 2 joins fd 1 here: the trace and substitution stderr were
            // written before the command's output.
            Ok(r) if self.merge_stderr => r.stdout = queued + &r.stdout,
            Ok(r) => r.stderr = queued + &r.stderr,
            Err(_) => {
                let later = std::mem::take(&mut self.subst_stderr);
                self.subst_stderr = queued + &later;
            }
        }
    }

    /// Emit the pending `$(...)` stderr ahead of `result`'s own.
    fn settle_pending_subst_stderr(&mut self, result: &mut Result<ExecResult>) {
        let warnings = self
            .subscript_warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default();
        if !warnings.is_empty() {
            self.queue_subst_stderr(&warnings.into());
        }
        let queued = std::mem::take(&mut self.subst_stderr);
        self.settle_subst_stderr(queued, result);
    }

    /// Set the pending `$(...)` stderr aside while an inner command or
    /// substitution runs; returns the slot to settle or release it from.
    /// A slot left behind by an inner early `?` return is dropped when an
    /// enclosing slot is taken back.
    fn hold_subst_stderr(&mut self) -> usize {
        let held = std::mem::take(&mut self.subst_stderr);
        self.subst_stderr_held.push(held);
        self.subst_stderr_held.len() - 1
    }

    fn take_held_subst_stderr(&mut self, slot: usize) -> crate::StreamData {
        self.subst_stderr_held.truncate(slot + 1);
        self.subst_stderr_held.pop().unwrap_or_default()
    }

    /// Settle the stderr set aside by [`Self::hold_subst_stderr`] on `result`.
    fn settle_held_subst_stderr(&mut self, slot: usize, result: &mut Result<ExecResult>) {
        let held = self.take_held_subst_stderr(slot);
        self.settle_subst_stderr(held, result);
    }

    /// End a substitution: the outer stderr set aside on entry comes back,
    /// followed by whatever the substitution queued.
    fn release_held_subst_stderr(&mut self, slot: usize) {
        let inner = std::mem::take(&mut self.subst_stderr);
        self.subst_stderr = self.take_held_subst_stderr(slot);
        self.queue_subst_stderr(&inner);
    }

    /// An ERR trap is set and live (not dormant in a subshell).
    fn err_trap_armed(&self) -> bool {
        !self.err_trap_dormant && !self.in_trap && self.scoped.traps.contains_key("ERR")
    }

    /// Commands whose own failure fires ERR, like bash: simple commands
    /// (function calls included), multi-command pipelines, `( )`, `[[ ]]`
    /// and `(( ))`. Lists and other compounds do not; the failing command
    /// inside them fires instead.
    fn fires_err_trap(command: &Command) -> bool {
        match command {
            Command::Simple(_) => true,
            Command::Pipeline(p) => !p.negated && p.commands.len() > 1,
            Command::Compound(c, _) => matches!(
                c,
                CompoundCommand::Subshell(_)
                    | CompoundCommand::Arithmetic(_)
                    | CompoundCommand::Conditional(_)
            ),
            Command::List(_) | Command::Function(_) => false,
        }
    }

    /// Run the ERR trap after a failing command, its output following the
    /// command's own (streamed first, so neither is dropped).
    async fn run_err_trap_after(&mut self, result: &mut ExecResult, emit_before: u64) {
        self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
            .await
            .ok();
        self.last_exit_code = result.exit_code;
        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        self.run_err_trap(&mut stdout, &mut stderr).await;
        result.stdout.append(&stdout);
        result.stderr.append(&stderr);
    }

    /// `eval` / `source` end an aborted body themselves (bash discards the
    /// rest of the text and returns 1): the caller keeps running.
    fn end_abort_at_boundary(result: &mut ExecResult) {
        if result.control_flow == ControlFlow::Abort {
            result.control_flow = ControlFlow::None;
            result.exit_code = 1;
        }
    }

    /// Turn a line-abort error (or an arithmetic error recorded by a
    /// read-only evaluation site) into `ControlFlow::Abort`, keeping the
    /// output produced so far.
    fn abort_line_on_error(&mut self, result: Result<ExecResult>) -> Result<ExecResult> {
        match result {
            Err(crate::error::Error::LineAbort(_)) if self.has_arith_unbound() => {
                self.take_arith_error();
                let msg = self.take_arith_unbound().unwrap_or_default();
                Ok(self.expansion_error_result(msg))
            }
            Err(crate::error::Error::LineAbort(msg)) => {
                self.take_arith_error();
                // `readonly v; v=x` under `set -e` ends the shell (bash); other
                // line aborts (arithmetic errors) do not.
                let assign_error = std::mem::take(&mut self.assign_error_abort);
                Ok(ExecResult {
                    stderr: msg.into(),
                    exit_code: 1,
                    control_flow: if assign_error && (self.errexit_active() || self.is_posix_mode())
                    {
                        ControlFlow::Exit(1)
                    } else {
                        ControlFlow::Abort
                    },
                    ..Default::default()
                })
            }
            Ok(mut r) => {
                if let Some(msg) = self.take_arith_unbound() {
                    self.take_arith_error();
                    let mut fatal = self.expansion_error_result(msg);
                    r.stderr.append(&fatal.stderr);
                    fatal.stdout = std::mem::take(&mut r.stdout);
                    fatal.stderr = std::mem::take(&mut r.stderr);
                    return Ok(fatal);
                }
                if let Some(msg) = self.take_arith_error() {
                    r.stderr
                        .append(&crate::StreamData::from(self.arith_diag("", &msg)));
                    r.exit_code = 1;
                    r.control_flow = ControlFlow::Abort;
                }
                Ok(r)
            }
            other => other,
        }
    }

    /// Result of a fatal expansion error (`set -u` unbound variable,
    /// `${x?msg}`): a non-interactive bash exits the shell with status 1, even
    /// from inside a function, `eval` or `source` (a subshell, `$(...)` or
    /// pipeline stage only ends itself). An interactive shell abandons the
    /// current command line instead.
    fn expansion_error_result(&mut self, err_msg: String) -> ExecResult {
        self.last_exit_code = 1;
        ExecResult {
            stderr: err_msg.into(),
            exit_code: 1,
            control_flow: if self.interactive {
                ControlFlow::Abort
            } else {
                ControlFlow::Exit(1)
            },
            ..Default::default()
        }
    }

    /// Error for a pending arithmetic error, if any (checked after expansion
    /// so the command does not run).
    fn pending_arith_abort(&self) -> Option<crate::error::Error> {
        self.take_arith_error()
            .map(|msg| crate::error::Error::LineAbort(self.arith_diag("", &msg)))
    }

    /// Records that an expansion stopped at a cap (`what` it was) and kept a
    /// shorter value (clix patch).
    pub(crate) fn note_expansion_cap(&self, what: &str) {
        let mut cap = self.expansion_cap.lock().unwrap_or_else(|p| p.into_inner());
        cap.get_or_insert_with(|| what.to_string());
    }

    /// The error for an expansion that stopped at a cap since the last
    /// check, so the command never runs with a shorter word (clix patch).
    fn pending_expansion_cap(&self) -> Option<crate::error::Error> {
        let what = self.expansion_cap.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        Some(crate::limits::LimitExceeded::Cut(format!("{what} is larger than one expansion may be")).into())
    }

    /// Charge every executable AST command, including optimized command forms.
    fn charge_command_execution(&mut self) -> Result<()> {
        self.execution_budget.consume_work(1)?;
        self.counters.tick_command(&self.limits)?;
        // THREAT[TM-DOS-059]: Check session-level command limit.
        self.counters
            .check_session_limits(&self.session_limits)
            .map_err(|e| crate::error::Error::Execution(e.to_string()))
    }

    /// Execute a compound command (if, for, while, etc.)
    async fn execute_compound(&mut self, compound: &CompoundCommand) -> Result<ExecResult> {
        match compound {
            CompoundCommand::If(if_cmd) => self.execute_if(if_cmd).await,
            CompoundCommand::For(_)
            | CompoundCommand::ArithmeticFor(_)
            | CompoundCommand::While(_)
            | CompoundCommand::Until(_)
            | CompoundCommand::Select(_) => {
                self.loop_depth += 1;
                let result = match compound {
                    CompoundCommand::For(for_cmd) => self.execute_for(for_cmd).await,
                    CompoundCommand::ArithmeticFor(arith_for) => {
                        self.execute_arithmetic_for(arith_for).await
                    }
                    CompoundCommand::While(while_cmd) => self.execute_while(while_cmd).await,
                    CompoundCommand::Until(until_cmd) => self.execute_until(until_cmd).await,
                    CompoundCommand::Select(select_cmd) => self.execute_select(select_cmd).await,
                    _ => unreachable!("loop compound matched above"),
                };
                self.loop_depth -= 1;
                result
            }
            CompoundCommand::Subshell(commands) => {
                self.counters.push_subshell(&self.limits)?;
                // Subshells run in fully isolated scope: variables, arrays,
                // functions, cwd, traps, positional params, and options are
                // all snapshot/restored so mutations don't leak to the parent.
                // The Arc-wrapped maps make each snapshot an O(1) refcount
                // bump; only mutations inside the subshell pay a clone.
                let snap = self.snapshot_subshell_state();
                let saved_call_stack = self.call_stack.clone();
                self.bash_subshell += 1;
                self.enter_subshell_pid();
                self.enter_nofork_scope(commands, true, SUBSHELL_PAREN);
                self.enter_subshell_err_scope();
                self.enter_subshell_debug_scope();
                let saved_exit = self.last_exit_code;
                let saved_coproc = self.coproc_buffers.clone();

                let emitted_before = (
                    self.output_stream_stdout_bytes,
                    self.output_stream_stderr_bytes,
                );
                // A subshell is outside any loop: `(continue)` only warns.
                let saved_loop_depth = std::mem::replace(&mut self.loop_depth, 0);
                let mut result = self.execute_command_sequence(commands).await;
                self.loop_depth = saved_loop_depth;
                // Left here, before anything can return early.
                self.leave_nofork_scope();
                // An `exec` redirect set inside the subshell applies to the
                // subshell's own output. It has to be routed here, while the
                // subshell's fd table is still current: the outermost loop
                // sees the parent's table, restored just below. What the
                // subshell wrote before the `exec` stays with the caller.
                let keep_floor = self.exec_install_mark;
                if let Ok(ref mut res) = result {
                    self.route_exec_output(res, emitted_before, keep_floor, None)
                        .await?;
                }

                // Fire EXIT trap set inside the subshell before restoring parent state
                if let Some(trap_cmd) = self.scoped.traps.get("EXIT").cloned() {
                    // Only fire if the subshell set its own EXIT trap (different from parent)
                    let parent_had_same = snap.scoped.traps.get("EXIT") == Some(&trap_cmd);
                    if !parent_had_same {
                        // THREAT[TM-DOS-030]: Propagate interpreter parser limits
                        if let Ok(trap_script) = self.parse_shell_text(&trap_cmd) {
                            let emit_before = self.output_emit_count;
                            if let Ok(ref mut res) = result
                                && let Ok(trap_result) =
                                    self.execute_command_sequence(&trap_script.commands).await
                            {
                                self.maybe_emit_output(
                                    &trap_result.stdout,
                                    &trap_result.stderr,
                                    emit_before,
                                )
                                .await?;
                                res.stdout.append(&trap_result.stdout);
                                res.stderr.append(&trap_result.stderr);
                            }
                        }
                    }
                }

                self.restore_subshell_state(snap);
                self.call_stack = saved_call_stack;
                self.last_exit_code = saved_exit;
                self.coproc_buffers = saved_coproc;
                self.counters.pop_subshell();

                // Consume Exit and Return control flow at subshell boundary —
                // they only terminate the subshell, not the parent shell.
                // Exit also carries fatal expansion errors (${var:?msg}, nounset).
                // Also clear errexit_suppressed: inner AND/OR suppression must not
                // escape the subshell boundary and prevent the parent set -e from
                // firing on the subshell's non-zero exit code.
                let mut result = self.abort_line_on_error(result);
                if let Ok(ref mut res) = result {
                    match res.control_flow {
                        ControlFlow::Exit(code) | ControlFlow::Return(code) => {
                            res.exit_code = code;
                            res.control_flow = ControlFlow::None;
                        }
                        // A line abort ends only the subshell, with status 1.
                        ControlFlow::Abort => {
                            res.exit_code = 1;
                            res.control_flow = ControlFlow::None;
                        }
                        _ => {}
                    }
                    res.errexit_suppressed = false;
                }

                result
            }
            CompoundCommand::BraceGroup(commands) => self.execute_command_sequence(commands).await,
            CompoundCommand::Case(_)
            | CompoundCommand::Arithmetic(_)
            | CompoundCommand::Conditional(_) => self.execute_traced_compound(compound).await,
            CompoundCommand::Time(time_cmd) => self.execute_time(time_cmd).await,
            CompoundCommand::Coproc(coproc_cmd) => self.execute_coproc(coproc_cmd).await,
        }
    }

    /// `case`, `(( ))` and `[[ ]]`, after the DEBUG handler (bash runs it
    /// for them as for simple commands). Boxed so `execute_compound`'s
    /// frame holds only a pointer.
    fn execute_traced_compound<'a>(
        &'a mut self,
        compound: &'a CompoundCommand,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            let mut debug = if self.has_debug_trap() {
                self.debug_trap_now().await
            } else {
                None
            };
            if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                return Ok(r);
            }
            let r = match compound {
                CompoundCommand::Case(case_cmd) => self.execute_case(case_cmd).await,
                CompoundCommand::Arithmetic(expr) => {
                    self.execute_arithmetic_command(&crate::parser::arith_exec_text(expr), expr)
                        .await
                }
                CompoundCommand::Conditional(words) => self.execute_conditional(words).await,
                // Only the three kinds above are routed here.
                _ => Ok(ExecResult::default()),
            };
            DebugTrapOutput::prepend_opt(debug, r)
        })
    }

    /// Execute an if statement
    async fn execute_if(&mut self, if_cmd: &IfCommand) -> Result<ExecResult> {
        // Accumulate stdout/stderr from all condition evaluations
        let mut cond_stdout = crate::StreamData::new();
        let mut cond_stderr = crate::StreamData::new();

        // Execute condition (no errexit checking - conditions are expected to fail)
        let condition_result = self.execute_condition_sequence(&if_cmd.condition).await?;
        cond_stdout.append(&condition_result.stdout);
        cond_stderr.append(&condition_result.stderr);
        // `exit`/`return`/`break` (or a fatal expansion error) inside the
        // condition ends the `if` with that control flow.
        if condition_result.control_flow != ControlFlow::None {
            return Ok(ExecResult {
                stdout: cond_stdout,
                stderr: cond_stderr,
                exit_code: condition_result.exit_code,
                control_flow: condition_result.control_flow,
                ..Default::default()
            });
        }

        if condition_result.exit_code == 0 {
            // Condition succeeded, execute then branch
            let mut result = self.execute_command_sequence(&if_cmd.then_branch).await?;
            result.stdout = cond_stdout + &result.stdout;
            result.stderr = cond_stderr + &result.stderr;
            return Ok(result);
        }

        // Check elif branches
        for (elif_condition, elif_body) in &if_cmd.elif_branches {
            let elif_result = self.execute_condition_sequence(elif_condition).await?;
            cond_stdout.append(&elif_result.stdout);
            cond_stderr.append(&elif_result.stderr);
            if elif_result.control_flow != ControlFlow::None {
                return Ok(ExecResult {
                    stdout: cond_stdout,
                    stderr: cond_stderr,
                    exit_code: elif_result.exit_code,
                    control_flow: elif_result.control_flow,
                    ..Default::default()
                });
            }

            if elif_result.exit_code == 0 {
                let mut result = self.execute_command_sequence(elif_body).await?;
                result.stdout = cond_stdout + &result.stdout;
                result.stderr = cond_stderr + &result.stderr;
                return Ok(result);
            }
        }

        // Execute else branch if present
        if let Some(else_branch) = &if_cmd.else_branch {
            let mut result = self.execute_command_sequence(else_branch).await?;
            result.stdout = cond_stdout + &result.stdout;
            result.stderr = cond_stderr + &result.stderr;
            return Ok(result);
        }

        // No branch executed, return condition output with success exit code
        Ok(ExecResult {
            stdout: cond_stdout,
            stderr: cond_stderr,
            exit_code: 0,
            ..Default::default()
        })
    }

    /// Execute a for loop
    async fn execute_for(&mut self, for_cmd: &ForCommand) -> Result<ExecResult> {
        // Validate for-loop variable name (bash rejects invalid names at runtime, exit 1)
        if !is_valid_var_name(&for_cmd.variable) {
            return Ok(ExecResult::err(
                self.diag(format!("`{}': not a valid identifier\n", for_cmd.variable)),
                1,
            ));
        }

        let mut acc = state::LoopAccumulator::new(self.retain_streamed_output());

        // Get iteration values: expand fields, then apply brace/glob expansion
        let values: Vec<String> = if let Some(words) = &for_cmd.words {
            let mut vals = Vec::new();
            for w0 in words {
                // Brace expansion runs first, on the unexpanded word.
                let braced = self.brace_expand_word(w0);
                for w in braced.as_deref().unwrap_or(std::slice::from_ref(w0)) {
                    let fields = self.expand_word_to_fields(w).await?;

                    // Quoted words skip brace/glob expansion — unless the
                    // word has unquoted glob chars (e.g. `"$var"*.ext`)
                    if w.quoted && !w.has_unquoted_glob {
                        vals.extend(fields);
                        continue;
                    }

                    for expanded in fields {
                        if let Err(pat) = self
                            .expand_glob_field_into(
                                expanded,
                                w.quoted && w.has_unquoted_glob,
                                &mut vals,
                            )
                            .await
                        {
                            self.last_exit_code = 1;
                            return Ok(ExecResult::err(self.diag(format!("no match: {pat}\n")), 1));
                        }
                    }
                }
            }
            vals
        } else {
            // No words specified - iterate over positional parameters ($@)
            self.call_stack
                .last()
                .map(|frame| frame.positional.clone())
                .unwrap_or_default()
        };

        self.counters.enter_loop();
        let result = async {
            for value in values {
                // Check loop iteration limit
                self.counters.tick_loop(&self.limits)?;

                // Set loop variable (respects nameref). `value` is moved
                // straight into `set_variable` — previously we cloned it
                // even though `values` already owned the String for us.
                // A nameref control variable is re-pointed at each word
                // (bash: `declare -n r; for r in a b` binds r to a, then b).
                if self.scoped.namerefs.contains_key(&for_cmd.variable)
                    && declare::valid_nameref_target(&value)
                {
                    self.set_nameref(&for_cmd.variable, value);
                } else {
                    self.set_variable(for_cmd.variable.clone(), value);
                }

                // DEBUG runs for each round, at the `for` line.
                let mut debug = if self.has_debug_trap() {
                    self.current_line = self.line_at(for_cmd.span.line());
                    self.debug_trap_now().await
                } else {
                    None
                };
                if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                    return Ok(r);
                }

                // Execute body
                let emit_before = self.output_emit_count;
                let result = self.execute_command_sequence(&for_cmd.body).await;
                let result = DebugTrapOutput::prepend_opt(debug, result)?;
                self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                    .await?;
                let should_errexit = self.errexit_active()
                    && result.exit_code != 0
                    && result.control_flow == ControlFlow::None
                    && !result.errexit_suppressed;
                match acc.accumulate(result) {
                    state::LoopAction::None => {
                        if should_errexit {
                            return Ok(acc.finish());
                        }
                    }
                    state::LoopAction::Break => break,
                    state::LoopAction::Continue => continue,
                    state::LoopAction::Exit(r) => return Ok(*r),
                }
            }

            Ok(acc.finish())
        }
        .await;
        self.counters.exit_loop();
        result
    }

    /// Execute a select loop: select var in list; do body; done
    ///
    /// Reads lines from pipeline_stdin. Each line is treated as the user's
    /// menu selection. If the line is a valid number, the variable is set to
    /// the corresponding item; otherwise it is set to empty. REPLY is always
    /// set to the raw input. EOF ends the loop.
    /// `select` with no stdin inside a terminal session: show the menu and
    /// `PS3` now (they are buffered in `stderr`) and wait for a typed line.
    /// `None` outside a terminal or on Ctrl-D.
    #[cfg(feature = "terminal")]
    async fn select_line_from_terminal(
        &mut self,
        menu: &crate::StreamData,
    ) -> Result<Option<String>> {
        let Some(tty) = self
            .current_execution_extensions()
            .get::<crate::terminal::Tty>()
        else {
            return Ok(None);
        };
        let tty = tty
            .try_with(Clone::clone)
            .map_err(|_| crate::Error::Cancelled)?;
        tty.write_cooked(menu.as_bytes());
        match crate::terminal::read_input(&tty, Default::default()).await {
            crate::terminal::LineRead::Line(line) => Ok(Some(line)),
            crate::terminal::LineRead::Eof => Ok(None),
            crate::terminal::LineRead::Interrupt => Err(crate::Error::Cancelled),
        }
    }

    #[cfg(not(feature = "terminal"))]
    async fn select_line_from_terminal(
        &mut self,
        _menu: &crate::StreamData,
    ) -> Result<Option<String>> {
        Ok(None)
    }

    /// Whether this execution runs inside a terminal session.
    fn has_terminal(&self) -> bool {
        #[cfg(feature = "terminal")]
        {
            self.current_execution_extensions()
                .get::<crate::terminal::Tty>()
                .is_some()
        }
        #[cfg(not(feature = "terminal"))]
        false
    }

    async fn execute_select(&mut self, select_cmd: &SelectCommand) -> Result<ExecResult> {
        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        let mut exit_code = 0;

        // Expand word list
        let mut values = Vec::new();
        for w0 in &select_cmd.words {
            // Brace expansion runs first, on the unexpanded word.
            let braced = self.brace_expand_word(w0);
            for w in braced.as_deref().unwrap_or(std::slice::from_ref(w0)) {
                let fields = self.expand_word_to_fields(w).await?;
                if w.quoted && !w.has_unquoted_glob {
                    values.extend(fields);
                } else {
                    for expanded in fields {
                        if let Err(pat) = self
                            .expand_glob_field_into(
                                expanded,
                                w.quoted && w.has_unquoted_glob,
                                &mut values,
                            )
                            .await
                        {
                            self.last_exit_code = 1;
                            return Ok(ExecResult::err(self.diag(format!("no match: {pat}\n")), 1));
                        }
                    }
                }
            }
        }

        if values.is_empty() {
            return Ok(ExecResult {
                stdout,
                stderr,
                exit_code,
                control_flow: ControlFlow::None,
                ..Default::default()
            });
        }

        // Build menu string
        let menu: String = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{}) {}", i + 1, v))
            .collect::<Vec<_>>()
            .join("\n");

        let ps3 = self
            .scoped
            .variables
            .get("PS3")
            .cloned()
            .unwrap_or_else(|| "#? ".to_string());

        self.counters.enter_loop();
        let result = async {
            loop {
                self.counters.tick_loop(&self.limits)?;

                let mut menu_text = crate::StreamData::new();
                menu_text.push_str(&menu);
                menu_text.push_byte(b'\n');
                menu_text.push_str(&ps3);
                // Output menu to stderr, or straight to the terminal when
                // the choice is typed there.
                if self.pipeline_stdin.is_some() || !self.has_terminal() {
                    stderr.append(&menu_text);
                }

                // Read a line from pipeline_stdin
                let line = if let Some(ref ps) = self.pipeline_stdin {
                    if ps.is_empty() {
                        // EOF: bash prints newline and exits with code 1
                        stdout.push_byte(b'\n');
                        exit_code = 1;
                        break;
                    }
                    let data = ps.clone();
                    if let Some(newline_pos) =
                        data.as_bytes().iter().position(|&byte| byte == b'\n')
                    {
                        let line =
                            String::from_utf8_lossy(&data.as_bytes()[..newline_pos]).into_owned();
                        self.pipeline_stdin = Some(data.as_bytes()[newline_pos + 1..].into());
                        line
                    } else {
                        self.pipeline_stdin = Some(crate::StreamData::new());
                        data.text_lossy().into_owned()
                    }
                } else {
                    match self.select_line_from_terminal(&menu_text).await? {
                        Some(line) => line,
                        None => {
                            // No stdin: bash prints newline and exits with code 1
                            stdout.push_byte(b'\n');
                            exit_code = 1;
                            break;
                        }
                    }
                };

                // Set REPLY to raw input
                self.insert_variable_checked("REPLY".to_string(), line.clone());

                // Parse selection number
                let selected = line
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| {
                        if n >= 1 && n <= values.len() {
                            Some(values[n - 1].clone())
                        } else {
                            None
                        }
                    })
                    .unwrap_or_default();

                self.insert_variable_checked(select_cmd.variable.clone(), selected);

                // Execute body
                let emit_before = self.output_emit_count;
                let result = self.execute_command_sequence(&select_cmd.body).await?;
                self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                    .await?;
                if self.retain_streamed_output() {
                    stdout.append(&result.stdout);
                    stderr.append(&result.stderr);
                }
                exit_code = result.exit_code;

                // Check for break/continue
                match result.control_flow {
                    ControlFlow::Break(n) => {
                        if n <= 1 {
                            break;
                        } else {
                            return Ok(ExecResult {
                                stdout,
                                stderr,
                                exit_code,
                                control_flow: ControlFlow::Break(n - 1),
                                ..Default::default()
                            });
                        }
                    }
                    ControlFlow::Continue(n) => {
                        if n <= 1 {
                            continue;
                        } else {
                            return Ok(ExecResult {
                                stdout,
                                stderr,
                                exit_code,
                                control_flow: ControlFlow::Continue(n - 1),
                                ..Default::default()
                            });
                        }
                    }
                    ControlFlow::Return(code) => {
                        return Ok(ExecResult {
                            stdout,
                            stderr,
                            exit_code: code,
                            control_flow: ControlFlow::Return(code),
                            ..Default::default()
                        });
                    }
                    ControlFlow::Exit(code) => {
                        return Ok(ExecResult {
                            stdout,
                            stderr,
                            exit_code: code,
                            control_flow: ControlFlow::Exit(code),
                            ..Default::default()
                        });
                    }
                    ControlFlow::Abort => {
                        return Ok(ExecResult {
                            stdout,
                            stderr,
                            exit_code: 1,
                            control_flow: ControlFlow::Abort,
                            ..Default::default()
                        });
                    }
                    ControlFlow::None => {}
                }
            }

            Ok(ExecResult {
                stdout,
                stderr,
                exit_code,
                control_flow: ControlFlow::None,
                ..Default::default()
            })
        }
        .await;
        self.counters.exit_loop();
        result
    }

    /// Execute a C-style arithmetic for loop: for ((init; cond; step))
    async fn execute_arithmetic_for(
        &mut self,
        arith_for: &ArithmeticForCommand,
    ) -> Result<ExecResult> {
        let mut acc = state::LoopAccumulator::new(self.retain_streamed_output());
        // DEBUG output of the clauses (bash runs it before each one), put
        // ahead of the next body's output or the loop's result.
        let mut debug: Option<Box<DebugTrapOutput>> = None;

        // Execute initialization
        if !arith_for.init.is_empty() {
            if self.has_debug_trap() {
                self.current_line = self.line_at(arith_for.span.line());
                Self::absorb_debug(&mut debug, self.debug_trap_now().await);
                if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                    return Ok(r);
                }
            }
            let init = self.arith_for_expr(&arith_for.init).await?;
            self.execute_arithmetic_with_side_effects(&init);
        }

        self.counters.enter_loop();
        let result = async {
            loop {
                // Check loop iteration limit
                self.counters.tick_loop(&self.limits)?;

                // Check condition (if empty, always true)
                // The clauses see the `for` line, not the body's last one.
                let for_line = self.line_at(arith_for.span.line());
                self.current_line = for_line;
                if self.has_debug_trap() {
                    Self::absorb_debug(&mut debug, self.debug_trap_now().await);
                    if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                        return Ok(r);
                    }
                }
                if !arith_for.condition.is_empty() {
                    let condition = self.arith_for_expr(&arith_for.condition).await?;
                    let cond_result = self.evaluate_arithmetic(&condition);
                    if cond_result == 0 {
                        break;
                    }
                }

                // Execute body
                let emit_before = self.output_emit_count;
                let result = self.execute_command_sequence(&arith_for.body).await;
                let result = DebugTrapOutput::prepend_opt(debug.take(), result)?;
                self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                    .await?;
                let should_errexit = self.errexit_active()
                    && result.exit_code != 0
                    && result.control_flow == ControlFlow::None
                    && !result.errexit_suppressed;
                match acc.accumulate(result) {
                    state::LoopAction::None | state::LoopAction::Continue => {
                        if should_errexit {
                            return Ok(acc.finish());
                        }
                    }
                    state::LoopAction::Break => break,
                    state::LoopAction::Exit(r) => return Ok(*r),
                }

                // Execute step
                if !arith_for.step.is_empty() {
                    self.current_line = for_line;
                    if self.has_debug_trap() {
                        Self::absorb_debug(&mut debug, self.debug_trap_now().await);
                        if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                            return Ok(r);
                        }
                    }
                    let step = self.arith_for_expr(&arith_for.step).await?;
                    self.execute_arithmetic_with_side_effects(&step);
                }
            }

            Ok(acc.finish())
        }
        .await;
        self.counters.exit_loop();
        DebugTrapOutput::prepend_opt(debug, result)
    }

    /// Add a DEBUG run's output to the pending one.
    fn absorb_debug(pending: &mut Option<Box<DebugTrapOutput>>, run: Option<Box<DebugTrapOutput>>) {
        let Some(run) = run else {
            return;
        };
        match pending {
            Some(p) => p.absorb(*run),
            None => *pending = Some(run),
        }
    }

    /// Execute an arithmetic command ((expression))
    /// Returns exit code 0 if result is non-zero, 1 if result is zero
    /// Execute a [[ conditional expression ]]
    async fn execute_conditional(&mut self, words: &[Word]) -> Result<ExecResult> {
        // Evaluate with lazy expansion to support short-circuit semantics.
        // In `[[ -n "${X:-}" && "$X" != "off" ]]`, if the left side is false,
        // the right side must NOT be expanded (to avoid set -u errors).
        self.cond_regex_error = false;
        self.cond_stderr.clear();
        let result = self.evaluate_conditional_words(words).await;
        let regex_error = std::mem::take(&mut self.cond_regex_error);
        let cond_stderr = std::mem::take(&mut self.cond_stderr);
        let result = result?;
        // If a nounset error occurred during evaluation, propagate it.
        if let Some(err_msg) = self.nounset_error.take() {
            return Ok(self.expansion_error_result(err_msg));
        }
        // An invalid regex that decides the result gives status 2.
        let exit_code = match (result, regex_error) {
            (true, _) => 0,
            (false, true) => 2,
            (false, false) => 1,
        };
        self.last_exit_code = exit_code;
        // `$(...)` stderr from the operands belongs to this command, so a
        // redirect on it (`[[ $(f) ]] 2>log`) catches it.
        let subst_stderr = std::mem::take(&mut self.subst_stderr);

        Ok(ExecResult {
            stdout: crate::StreamData::new(),
            stderr: subst_stderr + &crate::StreamData::from(cond_stderr),
            exit_code,
            control_flow: ControlFlow::None,
            ..Default::default()
        })
    }

    fn conditional_word_literal(word: &Word) -> Option<&str> {
        // A quoted `'!'` or `"("` is an operand, never an operator.
        if word.parts.len() == 1
            && !word.quoted
            && !word.part_quoted.first().copied().unwrap_or(false)
            && let WordPart::Literal(s) = &word.parts[0]
        {
            return Some(s);
        }
        None
    }

    fn conditional_words_wrapped(words: &[Word]) -> bool {
        if words.len() < 2
            || Self::conditional_word_literal(&words[0]) != Some("(")
            || Self::conditional_word_literal(&words[words.len() - 1]) != Some(")")
        {
            return false;
        }

        let mut depth = 0usize;
        for (i, word) in words.iter().enumerate() {
            match Self::conditional_word_literal(word) {
                Some("(") => depth += 1,
                Some(")") => {
                    let Some(next_depth) = depth.checked_sub(1) else {
                        return false;
                    };
                    depth = next_depth;
                    if depth == 0 && i < words.len() - 1 {
                        return false;
                    }
                }
                _ => {}
            }
        }

        depth == 0
    }

    fn conditional_args_wrapped(args: &[String]) -> bool {
        if args.len() < 2
            || args.first().map(|s| s.as_str()) != Some("(")
            || args.last().map(|s| s.as_str()) != Some(")")
        {
            return false;
        }

        let mut depth = 0usize;
        for (i, arg) in args.iter().enumerate() {
            match arg.as_str() {
                "(" => depth += 1,
                ")" => {
                    let Some(next_depth) = depth.checked_sub(1) else {
                        return false;
                    };
                    depth = next_depth;
                    if depth == 0 && i < args.len() - 1 {
                        return false;
                    }
                }
                _ => {}
            }
        }

        depth == 0
    }

    fn find_top_level_conditional_word_operator(words: &[Word], op: &str) -> Option<usize> {
        let mut depth = 0usize;
        for i in (0..words.len()).rev() {
            match Self::conditional_word_literal(&words[i]) {
                Some(")") => depth += 1,
                Some("(") => depth = depth.saturating_sub(1),
                Some(found) if found == op && depth == 0 && i > 0 => return Some(i),
                _ => {}
            }
        }
        None
    }

    fn find_top_level_conditional_arg_operator(args: &[String], op: &str) -> Option<usize> {
        let mut depth = 0usize;
        for i in (0..args.len()).rev() {
            match args[i].as_str() {
                ")" => depth += 1,
                "(" => depth = depth.saturating_sub(1),
                found if found == op && depth == 0 && i > 0 => return Some(i),
                _ => {}
            }
        }
        None
    }

    /// Evaluate [[ ]] from raw words with lazy expansion for short-circuit.
    fn evaluate_conditional_words<'a>(
        &'a mut self,
        words: &'a [Word],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool>> + Send + 'a>> {
        Box::pin(async move {
            if words.is_empty() {
                return Ok(false);
            }

            // Handle parentheses only when they wrap the whole expression.
            if Self::conditional_words_wrapped(words) {
                return self
                    .evaluate_conditional_words(&words[1..words.len() - 1])
                    .await;
            }

            // Look for || (lowest precedence), then && — only at current paren depth.
            if let Some(i) = Self::find_top_level_conditional_word_operator(words, "||") {
                let left = self.evaluate_conditional_words(&words[..i]).await?;
                if left {
                    return Ok(true); // short-circuit: skip right side
                }
                return self.evaluate_conditional_words(&words[i + 1..]).await;
            }
            if let Some(i) = Self::find_top_level_conditional_word_operator(words, "&&") {
                let left = self.evaluate_conditional_words(&words[..i]).await?;
                if !left {
                    return Ok(false); // short-circuit: skip right side
                }
                return self.evaluate_conditional_words(&words[i + 1..]).await;
            }

            // `!` binds tighter than `&&`/`||`: `[[ ! -z x || y ]]` is
            // `(! -z x) || y`.
            if Self::conditional_word_literal(&words[0]) == Some("!") {
                let rest = &words[1..];
                if self.is_xtrace_enabled() && Self::conditional_words_leaf(rest) {
                    // Traced as one primary: `+ [[ ! -z x ]]`.
                    let negated = !self.evaluate_conditional_leaf(rest, true).await?;
                    self.cond_regex_error = false;
                    return Ok(negated);
                }
                let negated = !self.evaluate_conditional_words(rest).await?;
                self.cond_regex_error = false;
                return Ok(negated);
            }

            self.evaluate_conditional_leaf(words, false).await
        })
    }

    /// `[[ s =~ ~/x ]]`: the directory a tilde expands to matches
    /// literally, as quoted text does (bash quotes tilde results).
    async fn tilde_regex_operand(&mut self, word: &Word) -> Result<String> {
        let [WordPart::Literal(lit)] = word.parts.as_slice() else {
            return self.expand_word(word).await;
        };
        let (prefix, rest) = lit.split_at(lit.find('/').unwrap_or(lit.len()));
        let dir = self.expand_word(&Word::literal(prefix)).await?;
        if dir == prefix {
            return self.expand_word(word).await;
        }
        Ok(format!("{}{rest}", regex::escape(&dir)))
    }

    /// A `[[ ]]` word list with no `!`, `&&`, `||` or wrapping parens on top.
    fn conditional_words_leaf(words: &[Word]) -> bool {
        !words.is_empty()
            && Self::conditional_word_literal(&words[0]) != Some("!")
            && !Self::conditional_words_wrapped(words)
            && Self::find_top_level_conditional_word_operator(words, "||").is_none()
            && Self::find_top_level_conditional_word_operator(words, "&&").is_none()
    }

    /// Evaluate one `[[ ]]` primary. `invert` only shapes its `set -x` line;
    /// the caller negates.
    fn evaluate_conditional_leaf<'a>(
        &'a mut self,
        words: &'a [Word],
        invert: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<bool>> + Send + 'a>> {
        Box::pin(async move {
            // Leaf: expand words and evaluate as a simple condition. The
            // right side of `==`/`=`/`!=` is a pattern: its quoted parts
            // match literally.
            let mut expanded = Vec::new();
            for (i, word) in words.iter().enumerate() {
                let is_pattern = i > 0
                    && !words[i - 1].quoted
                    && matches!(
                        words[i - 1].parts.as_slice(),
                        [WordPart::Literal(op)] if matches!(op.as_str(), "==" | "=" | "!=")
                    );
                let tilde_regex = i > 0
                    && Self::conditional_word_literal(&words[i - 1]) == Some("=~")
                    && !word.quoted
                    && matches!(word.parts.as_slice(), [WordPart::Literal(l)] if l.starts_with('~'));
                expanded.push(if is_pattern {
                    self.expand_pattern_word(word).await?
                } else if tilde_regex {
                    Box::pin(self.tilde_regex_operand(word)).await?
                } else {
                    self.expand_word(word).await?
                });
            }
            if self.is_xtrace_enabled() {
                let prefix = self.xtrace_prefix().await;
                self.queue_xtrace_line(&prefix, &xtrace::cond_term(invert, &expanded));
            }
            self.cond_regex_error = false;
            Ok(self.evaluate_conditional(&expanded).await)
        })
    }

    /// Evaluate a [[ ]] conditional expression from expanded words.
    fn evaluate_conditional<'a>(
        &'a mut self,
        args: &'a [String],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            if args.is_empty() {
                return false;
            }

            // A leaf `x OP y` is a binary test even when an operand reads
            // like `!` or `(` (`[[ '!' == ! ]]`): the parser already
            // settled the structure.
            let binary = args.len() == 3
                && matches!(
                    args[1].as_str(),
                    "=" | "=="
                        | "!="
                        | "<"
                        | ">"
                        | "=~"
                        | "-nt"
                        | "-ot"
                        | "-ef"
                        | "-eq"
                        | "-ne"
                        | "-lt"
                        | "-le"
                        | "-gt"
                        | "-ge"
                );

            // Handle parentheses only when they wrap the whole expression.
            if !binary && Self::conditional_args_wrapped(args) {
                return self.evaluate_conditional(&args[1..args.len() - 1]).await;
            }

            // Look for logical operators at current paren depth: || lowest, then &&.
            if !binary {
                if let Some(i) = Self::find_top_level_conditional_arg_operator(args, "||") {
                    return self.evaluate_conditional(&args[..i]).await
                        || self.evaluate_conditional(&args[i + 1..]).await;
                }
                if let Some(i) = Self::find_top_level_conditional_arg_operator(args, "&&") {
                    return self.evaluate_conditional(&args[..i]).await
                        && self.evaluate_conditional(&args[i + 1..]).await;
                }
            }

            // `!` binds tighter than `&&`/`||`.
            if !binary && args[0] == "!" {
                return !self.evaluate_conditional(&args[1..]).await;
            }

            match args.len() {
                1 => !args[0].is_empty(),
                2 => {
                    // Unary operators
                    let resolve = |p: &str| -> std::path::PathBuf {
                        let path = std::path::Path::new(p);
                        let joined = if path.is_absolute() {
                            path.to_path_buf()
                        } else {
                            crate::fs::vfs_join(&self.cwd, path)
                        };
                        crate::fs::normalize_path(&joined)
                    };
                    match args[0].as_str() {
                        "-z" => args[1].is_empty(),
                        "-n" => !args[1].is_empty(),
                        "-v" => self.cond_var_is_set(&args[1]),
                        "-e" | "-a" => self.fs.exists(&resolve(&args[1])).await.unwrap_or(false),
                        "-f" => self
                            .fs
                            .stat(&resolve(&args[1]))
                            .await
                            .map(|m| m.file_type.is_file())
                            .unwrap_or(false),
                        "-d" => self
                            .fs
                            .stat(&resolve(&args[1]))
                            .await
                            .map(|m| m.file_type.is_dir())
                            .unwrap_or(false),
                        "-r" | "-w" | "-x" => {
                            self.fs.exists(&resolve(&args[1])).await.unwrap_or(false)
                        }
                        "-s" => self
                            .fs
                            .stat(&resolve(&args[1]))
                            .await
                            .map(|m| m.size > 0)
                            .unwrap_or(false),
                        "-t" => {
                            // fd is a terminal — configurable via _TTY_N variables
                            let fd_key = format!("_TTY_{}", args[1]);
                            self.scoped
                                .variables
                                .get(&fd_key)
                                .map(|v| v == "1")
                                .unwrap_or(false)
                        }
                        _ => !args[0].is_empty(),
                    }
                }
                3 => {
                    // Binary operators
                    match args[1].as_str() {
                        // bash 5.2: `[[ == ]]` matches as if extglob were on.
                        "=" | "==" => self.pattern_matches_opts(
                            &args[0],
                            &args[2],
                            glob::PatternOpts {
                                nocase: self.is_nocasematch(),
                                extglob: true,
                            },
                        ),
                        "!=" => !self.pattern_matches_opts(
                            &args[0],
                            &args[2],
                            glob::PatternOpts {
                                nocase: self.is_nocasematch(),
                                extglob: true,
                            },
                        ),
                        "<" => args[0] < args[2],
                        ">" => args[0] > args[2],
                        "-eq" => self.cond_int_cmp(&args[0], &args[2], |a, b| a == b),
                        "-ne" => self.cond_int_cmp(&args[0], &args[2], |a, b| a != b),
                        "-lt" => self.cond_int_cmp(&args[0], &args[2], |a, b| a < b),
                        "-le" => self.cond_int_cmp(&args[0], &args[2], |a, b| a <= b),
                        "-gt" => self.cond_int_cmp(&args[0], &args[2], |a, b| a > b),
                        "-ge" => self.cond_int_cmp(&args[0], &args[2], |a, b| a >= b),
                        "=~" => self.regex_match(&args[0], &args[2]),
                        "-nt" => {
                            let lm = self.fs.stat(std::path::Path::new(&args[0])).await;
                            let rm = self.fs.stat(std::path::Path::new(&args[2])).await;
                            match (lm, rm) {
                                (Ok(l), Ok(r)) => l.modified > r.modified,
                                (Ok(_), Err(_)) => true,
                                _ => false,
                            }
                        }
                        "-ot" => {
                            let lm = self.fs.stat(std::path::Path::new(&args[0])).await;
                            let rm = self.fs.stat(std::path::Path::new(&args[2])).await;
                            match (lm, rm) {
                                (Ok(l), Ok(r)) => l.modified < r.modified,
                                (Err(_), Ok(_)) => true,
                                _ => false,
                            }
                        }
                        "-ef" => {
                            let lp = crate::builtins::resolve_path(
                                &std::path::PathBuf::from("/"),
                                &args[0],
                            );
                            let rp = crate::builtins::resolve_path(
                                &std::path::PathBuf::from("/"),
                                &args[2],
                            );
                            lp == rp
                        }
                        _ => false,
                    }
                }
                _ => false,
            }
        })
    }

    /// `[[ -v name ]]`: a scalar is set when it has a value; an array name
    /// alone tests element 0 (key `"0"` for assoc); `name[sub]` tests that
    /// element and `name[@]` any element.
    fn cond_var_is_set(&self, arg: &str) -> bool {
        if arg.contains('[') && arg.ends_with(']') {
            return self.resolve_param_expansion_name(arg).0;
        }
        let name = self.resolve_nameref(arg);
        if let Some(arr) = self.scoped.arrays.get(name) {
            return arr.contains_key(&0);
        }
        if let Some(arr) = self.scoped.assoc_arrays.get(name) {
            return arr.contains_key("0");
        }
        self.is_variable_set(name)
    }

    /// `[[ a -eq b ]]` and friends: both operands are arithmetic
    /// expressions, evaluated as they stand (no second `$` expansion). An
    /// invalid operand is reported and makes the test false.
    fn cond_int_cmp(&mut self, left: &str, right: &str, cmp: fn(i64, i64) -> bool) -> bool {
        let mut values = [0i64; 2];
        for (slot, operand) in values.iter_mut().zip([left, right]) {
            let (r, writes) = self.arith_eval_unexpanded(operand);
            self.apply_arith_writes(writes);
            match r {
                Ok(v) => *slot = v,
                Err(msg) => {
                    let msg = format!("{}: {msg}", arithmetic::diag_echo(operand.trim()));
                    let diag = self.arith_diag("[[: ", &msg);
                    self.cond_stderr.push_str(&diag);
                    return false;
                }
            }
        }
        cmp(values[0], values[1])
    }

    /// Perform regex match and set BASH_REMATCH array.
    fn regex_match(&mut self, string: &str, pattern: &str) -> bool {
        // POSIX ERE rejects unknown `[:class:]` names; the Rust engine would
        // read them as plain bracket members.
        let compiled = if ere_has_invalid_char_class(pattern) {
            None
        } else if self.is_nocasematch() {
            // `shopt -s nocasematch` makes `=~` case-insensitive too.
            self.regex_cache.get_or_compile(&format!("(?i){pattern}"))
        } else {
            self.regex_cache.get_or_compile(pattern)
        };
        match compiled {
            Some(re) => {
                if let Some(captures) = re.captures(string) {
                    // Set BASH_REMATCH array
                    let mut rematch = HashMap::new();
                    for (i, m) in captures.iter().enumerate() {
                        rematch.insert(i, m.map(|m| m.as_str().to_string()).unwrap_or_default());
                    }
                    self.arrays_mut()
                        .insert("BASH_REMATCH".to_string(), rematch);
                    true
                } else {
                    self.arrays_mut().remove("BASH_REMATCH");
                    false
                }
            }
            None => {
                // Invalid regex: status 2 when it decides `[[ ]]`.
                self.cond_regex_error = true;
                self.arrays_mut().remove("BASH_REMATCH");
                false
            }
        }
    }

    async fn execute_arithmetic_command(&mut self, expr: &str, raw: &str) -> Result<ExecResult> {
        let expr = if expr.contains("$(") || expr.contains('`') {
            Box::pin(self.expand_command_subs_in_arithmetic(expr)).await?
        } else {
            expr.to_string()
        };
        if self.is_xtrace_enabled() {
            // bash: `(( a = 42 ))` traces as `+ ((  a = 42  ))`, the
            // source text between one space inside each paren pair.
            let prefix = self.xtrace_prefix().await;
            self.queue_xtrace_line(&prefix, &format!("(( {raw} ))"));
        }
        // `$(...)` stderr belongs to this command, so `(( ... )) 2>f`
        // redirects it (as `[[ ]]` does).
        let subst_stderr = std::mem::take(&mut self.subst_stderr);
        let mut result = match self.try_evaluate_arithmetic_with_assign(&expr) {
            Ok(v) => ExecResult {
                exit_code: if v != 0 { 0 } else { 1 },
                ..Default::default()
            },
            Err(_) if self.has_arith_unbound() => {
                let msg = self.take_arith_unbound().unwrap_or_default();
                self.expansion_error_result(msg)
            }
            // `((...))` reports an arithmetic error and fails with status 1;
            // unlike `$((...))` it does not abandon the line.
            Err(msg) => ExecResult::err(self.arith_diag("((: ", &msg), 1),
        };
        result.stderr = subst_stderr + &result.stderr;
        Ok(result)
    }

    /// A `for ((init; cond; step))` expression with its `$(...)` run, each
    /// time it is evaluated, as `((...))` does.
    async fn arith_for_expr<'e>(&mut self, expr: &'e str) -> Result<std::borrow::Cow<'e, str>> {
        if expr.contains("$(") || expr.contains('`') {
            Ok(Box::pin(self.expand_command_subs_in_arithmetic(expr))
                .await?
                .into())
        } else {
            Ok(expr.into())
        }
    }

    /// Execute arithmetic expression with side effects (assignments, ++, --)
    fn execute_arithmetic_with_side_effects(&mut self, expr: &str) -> i64 {
        self.evaluate_arithmetic_with_assign(expr)
    }

    /// Execute a while loop
    async fn execute_while(&mut self, while_cmd: &WhileCommand) -> Result<ExecResult> {
        self.execute_condition_loop(&while_cmd.condition, &while_cmd.body, false)
            .await
    }

    /// Execute an until loop
    async fn execute_until(&mut self, until_cmd: &UntilCommand) -> Result<ExecResult> {
        self.execute_condition_loop(&until_cmd.condition, &until_cmd.body, true)
            .await
    }

    /// Shared implementation for while/until loops.
    /// `break_on_zero`: false = while (break when condition fails), true = until (break when condition succeeds)
    async fn execute_condition_loop(
        &mut self,
        condition: &[Command],
        body: &[Command],
        break_on_zero: bool,
    ) -> Result<ExecResult> {
        let mut acc = state::LoopAccumulator::new(self.retain_streamed_output());

        self.counters.enter_loop();
        let result = async {
            loop {
                // Check loop iteration limit
                self.counters.tick_loop(&self.limits)?;

                // Check condition (no errexit - conditions are expected to fail)
                let emit_before_cond = self.output_emit_count;
                let condition_result = self.execute_condition_sequence(condition).await?;
                // Condition commands produce visible output (e.g., `while cat <<EOF; do ... done`)
                self.maybe_emit_output(
                    &condition_result.stdout,
                    &condition_result.stderr,
                    emit_before_cond,
                )
                .await?;
                acc.stdout.append(&condition_result.stdout);
                acc.stderr.append(&condition_result.stderr);
                // `while break; do` leaves the loop from its condition.
                if condition_result.control_flow != ControlFlow::None {
                    match acc.accumulate(ExecResult {
                        exit_code: condition_result.exit_code,
                        control_flow: condition_result.control_flow,
                        ..Default::default()
                    }) {
                        state::LoopAction::None => {}
                        state::LoopAction::Break => break,
                        state::LoopAction::Continue => continue,
                        state::LoopAction::Exit(r) => return Ok(*r),
                    }
                }
                let should_break = if break_on_zero {
                    condition_result.exit_code == 0
                } else {
                    condition_result.exit_code != 0
                };
                if should_break {
                    break;
                }

                // Execute body
                let emit_before = self.output_emit_count;
                let result = self.execute_command_sequence(body).await?;
                self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                    .await?;
                let should_errexit = self.errexit_active()
                    && result.exit_code != 0
                    && result.control_flow == ControlFlow::None
                    && !result.errexit_suppressed;
                match acc.accumulate(result) {
                    state::LoopAction::None => {
                        if should_errexit {
                            return Ok(acc.finish());
                        }
                    }
                    state::LoopAction::Break => break,
                    state::LoopAction::Continue => continue,
                    state::LoopAction::Exit(r) => return Ok(*r),
                }
            }

            Ok(acc.finish())
        }
        .await;
        self.counters.exit_loop();
        result
    }

    /// Execute a case statement
    async fn execute_case(&mut self, case_cmd: &CaseCommand) -> Result<ExecResult> {
        use crate::parser::CaseTerminator;
        let word_value = self.expand_word(&case_cmd.word).await?;

        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        let mut exit_code = 0;
        let mut fallthrough = false;

        for case_item in &case_cmd.cases {
            let matched = if fallthrough {
                true
            } else {
                let mut m = false;
                for pattern in &case_item.patterns {
                    let pattern_str = self.expand_pattern_word(pattern).await?;
                    let opts = glob::PatternOpts {
                        nocase: self.is_nocasematch(),
                        extglob: self.is_extglob(),
                    };
                    if self.pattern_matches_opts(&word_value, &pattern_str, opts) {
                        m = true;
                        break;
                    }
                }
                m
            };

            if matched {
                let r = self.execute_command_sequence(&case_item.commands).await?;
                stdout.append(&r.stdout);
                stderr.append(&r.stderr);
                exit_code = r.exit_code;
                if r.control_flow != ControlFlow::None {
                    return Ok(ExecResult {
                        stdout,
                        stderr,
                        exit_code,
                        control_flow: r.control_flow,
                        ..Default::default()
                    });
                }
                match case_item.terminator {
                    CaseTerminator::Break => {
                        return Ok(ExecResult {
                            stdout,
                            stderr,
                            exit_code,
                            control_flow: ControlFlow::None,
                            ..Default::default()
                        });
                    }
                    CaseTerminator::FallThrough => {
                        fallthrough = true;
                    }
                    CaseTerminator::Continue => {
                        fallthrough = false;
                    }
                }
            }
        }

        Ok(ExecResult {
            stdout,
            stderr,
            exit_code,
            control_flow: ControlFlow::None,
            ..Default::default()
        })
    }

    /// Execute the reserved-word pipeline wrapper. Host CPU and memory metrics
    /// are deliberately never inferred from the containing process.
    async fn execute_time(&mut self, time_cmd: &TimeCommand) -> Result<ExecResult> {
        use crate::time_compat::Instant;

        if let Some(message) = &time_cmd.option_error {
            return Ok(ExecResult::err(format!("time: {message}\n"), 2));
        }
        if time_cmd.append && time_cmd.output.is_none() {
            return Ok(ExecResult::err(
                "time: option '-a/--append' requires '-o/--output'\n",
                2,
            ));
        }

        let format = if let Some(word) = &time_cmd.format {
            let expanded = self.expand_word(word).await?;
            if let Err(field) = validate_time_format(&expanded) {
                return Ok(ExecResult::err(
                    format!("time: unsupported format field '{field}'\n"),
                    2,
                ));
            }
            Some(expanded)
        } else {
            None
        };
        let output = if let Some(word) = &time_cmd.output {
            if !self.shell_features.has_file_redirects() {
                return Ok(ExecResult::err("time: output files disabled\n", 1));
            }
            Some(self.expand_word(word).await?)
        } else {
            None
        };

        let command_start = self.counters.commands;
        let loop_start = self.counters.total_loop_iterations;
        let work_start = self.execution_budget.work_units();
        let start = Instant::now();
        let emit_start = self.output_emit_count;
        let mut result = if let Some(cmd) = &time_cmd.command {
            self.execute_command(cmd).await?
        } else {
            ExecResult::ok(String::new())
        };
        // The report is streamed on its own below; stream the command's
        // output first, or the caller would take the report for all of it.
        self.maybe_emit_output(&result.stdout, &result.stderr, emit_start)
            .await?;
        let mut elapsed = start.elapsed();
        // THREAT[TM-INF-033]: Hardened mode exposes only a 100ms lower-bound
        // bucket, preventing `time` from becoming a high-resolution oracle.
        if self.hardened_timing {
            elapsed = std::time::Duration::from_millis(
                u64::try_from((elapsed.as_millis() / 100) * 100).unwrap_or(u64::MAX),
            );
        }

        let usage = TimeUsage {
            elapsed,
            exit_status: result.exit_code,
            commands: self.counters.commands.saturating_sub(command_start),
            loops: self
                .counters
                .total_loop_iterations
                .saturating_sub(loop_start),
            work_units: self
                .execution_budget
                .work_units()
                .saturating_sub(work_start),
        };
        let report = if let Some(format) = format {
            match render_time_format(&format, &usage, self.limits.max_stderr_bytes) {
                Ok(report) => report,
                Err(()) => {
                    self.append_time_stderr(
                        &mut result,
                        "time: formatted report exceeds output limit\n",
                    )
                    .await;
                    result.exit_code = 1;
                    return Ok(result);
                }
            }
        } else if time_cmd.verbose {
            verbose_time_report(&usage)
        } else if !time_cmd.posix_format
            && let Some(timeformat) = self.scoped.variables.get("TIMEFORMAT")
        {
            match render_timeformat(timeformat, elapsed) {
                Ok(report) => report,
                Err(bad) => self.diag(format!("TIMEFORMAT: `{bad}': invalid format character\n")),
            }
        } else if time_cmd.posix_format {
            format!(
                "real {:.2}\nuser unavailable\nsys unavailable\n",
                elapsed.as_secs_f64()
            )
        } else {
            let total_secs = elapsed.as_secs_f64();
            let minutes = (total_secs / 60.0).floor() as u64;
            let seconds = total_secs % 60.0;
            format!(
                "\nreal\t{}m{:.3}s\nuser\tunavailable\nsys\tunavailable\n",
                minutes, seconds
            )
        };

        // THREAT[TM-DOS-099]: `-o` must not bypass the diagnostic output cap.
        if report.len() > self.limits.max_stderr_bytes {
            self.append_time_stderr(&mut result, "time: formatted report exceeds output limit\n")
                .await;
            result.exit_code = 1;
            return Ok(result);
        }

        if let Some(path) = output {
            if self
                .write_time_report(&path, report.as_bytes(), time_cmd.append)
                .await
                .is_err()
            {
                self.append_time_stderr(
                    &mut result,
                    &format!(
                        "time: cannot write output file '{}'\n",
                        sanitize_time_path(&path)
                    ),
                )
                .await;
                result.exit_code = 1;
            }
        } else {
            self.append_time_stderr(&mut result, &report).await;
        }

        Ok(result)
    }

    async fn append_time_stderr(&mut self, result: &mut ExecResult, message: &str) {
        result.stderr.push_str(message);
        let emit_before = self.output_emit_count;
        self.maybe_emit_output(
            &crate::StreamData::new(),
            &crate::StreamData::from(message),
            emit_before,
        )
        .await
        .ok();
    }

    async fn write_time_report(&self, path: &str, report: &[u8], append: bool) -> Result<()> {
        let path = self.resolve_path(path);
        if append {
            return self.fs.append_file(&path, report).await;
        }

        let parent = path.parent().unwrap_or_else(|| Path::new("/"));
        let id = TIME_REPORT_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = crate::fs::vfs_join(parent, format!(".bashkit-time-{id}.tmp"));
        if let Err(error) = self.fs.write_file(&temp, report).await {
            let _ = self.fs.remove(&temp, false).await;
            return Err(error);
        }
        if let Err(error) = self.fs.rename(&temp, &path).await {
            let _ = self.fs.remove(&temp, false).await;
            return Err(error);
        }
        Ok(())
    }

    /// Execute `bash` or `sh` command - interpret scripts using this interpreter.
    ///
    /// Supports:
    /// - `bash -c "command"` - execute a command string
    /// - `bash -n script.sh` - syntax check only (noexec)
    /// - `bash script.sh [args...]` - execute a script file
    /// - `echo 'echo hello' | bash` - execute script from stdin
    /// - `bash --version` / `bash --help`
    ///
    /// SECURITY: This re-invokes the virtual interpreter, NOT external bash.
    /// See threat model TM-ESC-015 for security analysis.
    /// Build the "invalid option" error real Bash prints when the shell is
    /// invoked with an unknown option (e.g. `bash --verison` or `bash -q`).
    /// Bash exits 2 and prints the offending option plus a usage line. We keep
    /// the usage text aligned with the virtual interpreter (no GNU wording).
    fn shell_invalid_option(shell_name: &str, opt: &str) -> ExecResult {
        ExecResult::err(
            format!(
                "{shell_name}: {opt}: invalid option\n\
                 Usage:\t{shell_name} [option] ... [file [argument] ...]\n"
            ),
            2,
        )
    }

    /// Parse `bash`/`sh` command-line arguments into structured form, the
    /// way bash's `parse_shell_options` does: options (`-x`, `+x`, `-o NAME`,
    /// `-O SHOPT`, clusters like `-xe`) run until the first word that is not
    /// one; `-` or `--` ends them and is dropped. `-c` (or `+c`) only marks
    /// command mode: the command string is the first word after the options
    /// (`bash -c -x 'echo hi'`), and the words after it are `$0`, `$1`, ...
    /// Returns `Err(ExecResult)` for --version/--help and usage errors.
    #[allow(clippy::type_complexity, clippy::result_large_err)]
    fn parse_shell_args(
        shell_name: &str,
        args: &[String],
    ) -> std::result::Result<
        (
            Option<String>,        // command_string (-c)
            Option<String>,        // script_file
            Vec<String>,           // script_args
            bool,                  // noexec
            Vec<(String, String)>, // shell_opts (variable, value)
        ),
        ExecResult,
    > {
        let mut command_string: Option<String> = None;
        let mut script_file: Option<String> = None;
        let mut script_args: Vec<String> = Vec::new();
        let mut noexec = false;
        let mut want_command = false;
        let mut shell_opts: Vec<(String, String)> = Vec::new();
        let mut idx = 0;
        let flag = |on: bool| if on { "1" } else { "0" }.to_string();

        while idx < args.len() {
            let arg = args[idx].as_str();
            match arg {
                "--version" => {
                    return Err(ExecResult::ok(format!(
                        "Bashkit {} (virtual {} interpreter)\n",
                        env!("CARGO_PKG_VERSION"),
                        shell_name
                    )));
                }
                "--help" => {
                    return Err(ExecResult::ok(format!(
                        "Usage: {} [option] ... [file [argument] ...]\n\
                         Virtual shell interpreter (not GNU bash)\n\n\
                         Options:\n\
                         \t-c string\tExecute commands from string\n\
                         \t-n\t\tCheck syntax without executing (noexec)\n\
                         \t-e\t\tExit on error (errexit)\n\
                         \t-x\t\tPrint commands before execution (xtrace)\n\
                         \t-u\t\tError on unset variables (nounset)\n\
                         \t-o option\tSet option by name\n\
                         \t-O shopt\tSet shopt option by name\n\
                         \t--version\tShow version\n\
                         \t--help\t\tShow this help\n",
                        shell_name
                    )));
                }
                "-" | "--" => {
                    idx += 1;
                    break;
                }
                s if s.starts_with("--") => {
                    // Long options. Recognize the set real Bash accepts at
                    // invocation (applying the ones we implement, ignoring the
                    // rest) so valid options like `--norc` keep working, and
                    // reject typos like `--verison` the way Bash does.
                    let name = s.split('=').next().unwrap_or(s);
                    idx += 1;
                    match name {
                        "--verbose" => shell_opts.push(("SHOPT_v".to_string(), flag(true))),
                        // Accepted by Bash but not modelled here (no-op).
                        "--norc" => shell_opts.push((SHELL_ARG_NORC.to_string(), flag(true))),
                        "--login" | "--noprofile" | "--noediting" | "--posix" | "--restricted"
                        | "--protected" | "--debugger" | "--debug" | "--dump-strings"
                        | "--dump-po-strings" => {}
                        // These take an argument, as `--opt=VAL` or `--opt VAL`.
                        "--rcfile" | "--init-file" | "--wordexp" => {
                            let value = if let Some((_, v)) = s.split_once('=') {
                                v.to_string()
                            } else {
                                if idx >= args.len() {
                                    return Err(ExecResult::err(
                                        format!(
                                            "{shell_name}: {name}: option requires an argument\n"
                                        ),
                                        2,
                                    ));
                                }
                                idx += 1;
                                args[idx - 1].clone()
                            };
                            if name != "--wordexp" {
                                shell_opts.push((SHELL_ARG_RCFILE.to_string(), value));
                            }
                        }
                        _ => return Err(Self::shell_invalid_option(shell_name, s)),
                    }
                }
                s if (s.starts_with('-') || s.starts_with('+')) && s.len() > 1 => {
                    let on = s.starts_with('-');
                    idx += 1;
                    for c in s.chars().skip(1) {
                        match c {
                            'c' => want_command = true,
                            'n' => noexec = on,
                            'i' => shell_opts.push((SHELL_ARG_INTERACTIVE.to_string(), flag(on))),
                            // Accepted at invocation but not acted on here.
                            'l' | 'r' | 's' | 'D' => {}
                            'o' | 'O' => {
                                let Some(name) = args.get(idx) else {
                                    return Err(ExecResult::err(
                                        format!(
                                            "{shell_name}: -{c}: option requires an argument\n"
                                        ),
                                        2,
                                    ));
                                };
                                idx += 1;
                                let var = if c == 'o' {
                                    builtins::set_o_var_by_name(name).map(str::to_string)
                                } else {
                                    builtins::shopt_known(name).then(|| format!("SHOPT_{name}"))
                                };
                                match var {
                                    Some(var) => shell_opts.push((var, flag(on))),
                                    None => {
                                        let what = if c == 'o' {
                                            "set: {name}: invalid option name"
                                        } else {
                                            "{name}: invalid shell option name"
                                        };
                                        return Err(ExecResult::err(
                                            format!(
                                                "{shell_name}: {}\n",
                                                what.replace("{name}", name)
                                            ),
                                            2,
                                        ));
                                    }
                                }
                            }
                            other => match builtins::set_o_var_by_letter(other) {
                                Some(var) => shell_opts.push((var.to_string(), flag(on))),
                                None => {
                                    let sign = if on { '-' } else { '+' };
                                    return Err(Self::shell_invalid_option(
                                        shell_name,
                                        &format!("{sign}{other}"),
                                    ));
                                }
                            },
                        }
                    }
                }
                _ => break,
            }
        }

        if want_command {
            let Some(cmd) = args.get(idx) else {
                return Err(ExecResult::err(
                    format!("{shell_name}: -c: option requires an argument\n"),
                    2,
                ));
            };
            command_string = Some(cmd.clone());
            script_args = args[idx + 1..].to_vec();
        } else if let Some(file) = args.get(idx) {
            script_file = Some(file.clone());
            script_args = args[idx + 1..].to_vec();
        }

        Ok((command_string, script_file, script_args, noexec, shell_opts))
    }

    /// `bash`/`sh` as a command. Its redirects apply to everything it
    /// reports, including a syntax error or a missing script file
    /// (`bash -c 'if then fi' 2>/dev/null` is silent).
    async fn execute_shell(
        &mut self,
        shell_name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let result = self
            .execute_shell_unredirected(shell_name, args, stdin, redirects)
            .await?;
        self.apply_redirections(result, redirects).await
    }

    async fn execute_shell_unredirected(
        &mut self,
        shell_name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // Parse arguments — Err means early-return result (--version, --help, errors)
        let (command_string, script_file, script_args, noexec, mut shell_opts) =
            match Self::parse_shell_args(shell_name, args) {
                Ok(parsed) => parsed,
                Err(result) => return Ok(result),
            };
        let invocation = ShellInvocation::take_from(&mut shell_opts);

        // Determine what to execute
        let is_command_mode = command_string.is_some();
        let script_content = if let Some(cmd) = command_string {
            cmd
        } else if let Some(ref file) = script_file {
            let path = self.resolve_path(file);
            match self.fs.read_file(&path).await {
                Ok(content) => decode_file_bytes_for_path(&path, &content),
                Err(_) => {
                    return Ok(ExecResult::err(
                        format!("{}: {}: No such file or directory\n", shell_name, file),
                        127,
                    ));
                }
            }
        } else if let Some(ref stdin_content) = stdin {
            stdin_content.text_lossy().into_owned()
        } else {
            return Ok(ExecResult::ok(String::new()));
        };

        if script_content.len() > self.limits.max_input_bytes {
            return Ok(ExecResult::err(
                format!(
                    "{}: input exceeds maximum size ({} > {})\n",
                    shell_name,
                    script_content.len(),
                    self.limits.max_input_bytes
                ),
                2,
            ));
        }

        // Who reports a syntax error: `bash: -c` (or `$0: -c`), the script
        // file, or the shell itself for stdin.
        let who = if is_command_mode {
            format!(
                "{}: -c",
                script_args
                    .first()
                    .map(String::as_str)
                    .unwrap_or(shell_name)
            )
        } else if let Some(file) = &script_file {
            file.clone()
        } else {
            shell_name.to_string()
        };

        // THREAT[TM-DOS-021]: Propagate interpreter's parser limits to child shell
        let max_ast_depth = self.limits.max_ast_depth;
        let max_parser_operations = self.limits.max_parser_operations;
        let parser_timeout = self.limits.parser_timeout;

        // On wasm32-unknown-unknown there is no blocking thread pool and no
        // reliable timer driver, so tokio::time::timeout + spawn_blocking call
        // std::time and panic ("time not implemented"), poisoning the whole
        // module. Parse inline instead: the parser enforces the timeout itself
        // through time_compat and still bounds runaway input via
        // max_parser_operations. Mirrors the top-level parse path in lib.rs.
        // A top-level command never reaches this branch — only a spawned
        // bash/sh child does — which is why the panic hid until a subshell ran.
        #[cfg(target_family = "wasm")]
        let script = {
            let parser = Parser::with_limits_and_timeout(
                &script_content,
                max_ast_depth,
                max_parser_operations,
                Some(parser_timeout),
            )
            .with_execution_budget(self.execution_budget.clone())
            .with_options(self.parse_options());
            match nested_partial_parse(parser.parse_recovering(), noexec, &who, &script_content) {
                Ok(s) => s,
                Err(e) => {
                    return Ok(ExecResult::err(
                        nested_syntax_report(&e, &who, &script_content),
                        2,
                    ));
                }
            }
        };

        // On native targets keep the spawn_blocking + timeout path so the async
        // runtime can pre-empt a runaway parser off the executor thread.
        #[cfg(not(target_family = "wasm"))]
        let script = {
            let script_owned = script_content.clone();
            let execution_budget = self.execution_budget.clone();
            let options = self.parse_options();
            let parse_result = tokio::time::timeout(parser_timeout, async move {
                tokio::task::spawn_blocking(move || {
                    let parser =
                        Parser::with_limits(&script_owned, max_ast_depth, max_parser_operations)
                            .with_execution_budget(execution_budget)
                            .with_options(options);
                    parser.parse_recovering()
                })
                .await
            })
            .await;
            match parse_result
                .map(|r| r.map(|p| nested_partial_parse(p, noexec, &who, &script_content)))
            {
                Ok(Ok(Ok(s))) => s,
                Ok(Ok(Err(e))) => {
                    return Ok(ExecResult::err(
                        nested_syntax_report(&e, &who, &script_content),
                        2,
                    ));
                }
                Ok(Err(e)) => {
                    return Ok(ExecResult::err(
                        format!("{}: parser task failed: {}\n", shell_name, e),
                        2,
                    ));
                }
                Err(_) => {
                    return Ok(ExecResult::err(
                        format!(
                            "{}: parser timeout after {}ms\n",
                            shell_name,
                            parser_timeout.as_millis()
                        ),
                        2,
                    ));
                }
            }
        };

        if noexec {
            return Ok(ExecResult::ok(String::new()));
        }

        // Determine $0 and positional parameters
        let (name_arg, positional_args) = if is_command_mode {
            if script_args.is_empty() {
                (shell_name.to_string(), Vec::new())
            } else {
                let name = script_args[0].clone();
                let positional = script_args[1..].to_vec();
                (name, positional)
            }
        } else if let Some(ref file) = script_file {
            (file.clone(), script_args)
        } else {
            (shell_name.to_string(), Vec::new())
        };

        // Real bash spawns a child process for `bash`/`sh`, so non-exportable
        // state (arrays/assoc_arrays/functions/aliases/namerefs, plus
        // non-exported scalars) must not be visible to the child, and
        // mutations the child performs must not leak back to the parent.
        // Snapshot first so a full restore handles both directions; then
        // wipe the isolated state before running. See issue #1777.
        // THREAT[TM-DOS-125]: each child shell adds a deep chain of stack
        // frames; without a cap a script that runs itself via `sh` overflows
        // the process stack. It counts against the function depth and has a
        // tighter cap of its own (a level costs several function calls).
        if self.child_shell_depth >= MAX_CHILD_SHELL_DEPTH
            || self.counters.push_function(&self.limits).is_err()
        {
            return Ok(ExecResult::err(
                format!("{shell_name}: maximum nesting depth exceeded\n"),
                2,
            ));
        }
        self.child_shell_depth += 1;
        let child_snapshot = self.snapshot_subshell_state();
        // A new shell starts at subshell level 0.
        self.bash_subshell = 0;
        self.xtrace_depth = 0;
        // Read, not taken: a builtin that starts several shells (`xargs`)
        // starts each one in place; restored below.
        let in_place = self.nofork_now;
        let shlvl_warning = self.reset_state_for_child_shell(in_place);
        // Only a `-c` string runs its last command in place (bash's
        // `parse_and_execute`), and only when nothing follows it.
        let target = if is_command_mode && script.trailing_error.is_none() {
            Self::nofork_candidate(&script.commands, false)
        } else {
            0
        };
        self.push_nofork_scope(target, 0);
        // Output the `bash` command's own redirects will route must not stream
        // from the child first (`bash -c 'echo x >&2' 2>/dev/null` printed x),
        // as for functions and compounds.
        let region = self.enter_output_region(redirects);
        // The warning is the child's first output, so a streaming caller sees
        // it before anything the child prints.
        if let Some(ref warning) = shlvl_warning {
            let before = self.output_emit_count;
            self.maybe_emit_output(
                &crate::StreamData::new(),
                &crate::StreamData::from(warning.clone()),
                before,
            )
            .await?;
        }

        // Push call frame, apply options, execute, restore, pop
        self.call_stack.push(CallFrame {
            name: name_arg,
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: positional_args,
            keeps_arg0: false,
        });

        for (var, val) in &shell_opts {
            self.insert_variable_checked(var.clone(), val.clone());
        }
        self.insert_variable_checked("OPTIND".to_string(), "1".to_string());
        self.getopts_char_idx = 0;

        // Forward piped stdin to child when executing a script file or -c command
        let saved_stdin = self.pipeline_stdin.take();
        if script_file.is_some() || is_command_mode {
            self.pipeline_stdin = stdin.clone();
        }

        // The child is a fresh non-interactive shell: BASH_SOURCE holds only
        // its script file (none for `-c`), so its diagnostics name `$0` or
        // that file and count lines from its own text.
        let saved_source_stack = std::mem::replace(
            &mut self.bash_source_stack,
            script_file.iter().map(|f| SourceFrame::script(f)).collect(),
        );
        self.update_bash_source();
        let saved_line = self.current_line;
        let saved_interactive = std::mem::replace(&mut self.interactive, invocation.interactive);
        let saved_c_string_depth = std::mem::replace(
            &mut self.c_string_depth,
            if is_command_mode && !invocation.interactive {
                self.script_depth + 1
            } else {
                0
            },
        );

        // A new shell is outside any loop, function or sourced file.
        let saved_loop_depth = std::mem::replace(&mut self.loop_depth, 0);
        let saved_return_depth = std::mem::replace(&mut self.return_depth, 0);
        // ...and outside the caller's `if`/`||`/`!` context: a child process
        // keeps its own `set -e` (`if bash test.sh` must see test.sh fail).
        let saved_condition_depth = std::mem::replace(&mut self.condition_sequence_depth, 0);
        // The child reads its own input: script file or stdin, line by line
        // (`bash -c` strings are not recorded in the history).
        let saved_reader = self.line_reader.take();
        let (parent_history, rc_result) = if invocation.interactive {
            let (parent, rc) = self
                .enter_interactive_shell(invocation.rcfile.clone(), invocation.norc)
                .await;
            (Some(parent), rc)
        } else {
            (None, None)
        };
        let rc_exit = rc_result.as_ref().and_then(|r| match r.control_flow {
            ControlFlow::Exit(code) => Some(code),
            _ => None,
        });
        let result = if let Some(code) = rc_exit {
            let mut r = rc_result.clone().unwrap_or_default();
            r.exit_code = code;
            r.control_flow = ControlFlow::None;
            Ok(r)
        } else {
            if !is_command_mode {
                self.line_reader = Some(Box::new(history::LineReader::new(
                    &script,
                    Arc::from(script_content.as_str()),
                    invocation.interactive,
                )));
            }
            let result = self.execute_script_body(&script, true, false).await;
            match (rc_result, result) {
                (Some(rc), Ok(mut r)) => {
                    let mut out = rc.stdout;
                    out.append(&r.stdout);
                    r.stdout = out;
                    let mut err = rc.stderr;
                    err.append(&r.stderr);
                    r.stderr = err;
                    Ok(r)
                }
                (_, result) => result,
            }
        };
        if let Some(parent) = parent_history {
            self.leave_interactive_shell(parent).await;
        }
        self.line_reader = saved_reader;
        self.loop_depth = saved_loop_depth;
        self.return_depth = saved_return_depth;
        self.condition_sequence_depth = saved_condition_depth;

        self.interactive = saved_interactive;
        self.c_string_depth = saved_c_string_depth;
        self.current_line = saved_line;
        self.bash_source_stack = saved_source_stack;
        self.update_bash_source();

        // Restore stdin
        self.pipeline_stdin = saved_stdin;
        self.leave_output_region(region);

        self.pop_call_frame();

        // Restore parent state — full revert of the snapshot since the child
        // is process-isolated. This also undoes OPTIND/SHOPT_* writes above.
        self.restore_subshell_state(child_snapshot);
        self.leave_nofork_scope();
        self.counters.pop_function();
        self.child_shell_depth -= 1;
        self.nofork_now = in_place;

        match result {
            Ok(mut exec_result) => {
                if let Some(warning) = shlvl_warning {
                    exec_result.stderr =
                        crate::StreamData::from(warning + &exec_result.stderr.text_lossy());
                }
                Ok(exec_result)
            }
            Err(e) => Err(e),
        }
    }

    fn merge_stderr_into_stdout(result: &mut ExecResult) {
        if !result.stderr.is_empty() {
            let err = std::mem::take(&mut result.stderr);
            result.stdout.append(&err);
        }
    }

    /// Enter the body of a command whose `redirects` route output: its
    /// output must not stream before they apply (the callback is held), and
    /// when they leave fd 1 and fd 2 at one place stderr merges in order
    /// (see `merge_stderr`). Undo with `leave_output_region`.
    fn enter_output_region(&mut self, redirects: &[Redirect]) -> OutputRegion {
        let callback = if Self::has_output_redirect(redirects) {
            self.output_callback.take()
        } else {
            None
        };
        let merge = self.merge_stderr;
        if let Some(joined) = redirection::stdout_stderr_joined(redirects) {
            self.merge_stderr = joined;
        }
        OutputRegion { callback, merge }
    }

    fn leave_output_region(&mut self, region: OutputRegion) {
        if let Some(cb) = region.callback {
            self.output_callback = Some(cb);
        }
        self.merge_stderr = region.merge;
    }

    /// Whether `redirects` route any output (anything but stdin-side ones).
    fn has_output_redirect(redirects: &[Redirect]) -> bool {
        redirects.iter().any(|r| {
            !matches!(
                r.kind,
                RedirectKind::Input
                    | RedirectKind::HereDoc
                    | RedirectKind::HereDocStrip
                    | RedirectKind::HereString
            )
        })
    }

    /// `$SHLVL` for a shell started from one whose level is `parent`, following
    /// bash's `adjust_shell_level`: a level that is not a number counts as 0, a
    /// negative one lands on 0 rather than counting up from below, and a level
    /// that would pass 999 restarts at 1 with a warning (so a script that runs
    /// itself cannot drive the number up forever).
    /// With `in_place` the parent runs the child without a fork (see
    /// `NoforkScope`) and lowers its own level first, as bash does.
    fn child_shell_level(parent: Option<&str>, in_place: bool) -> (String, Option<String>) {
        let parent: i64 = parent
            .map(str::trim)
            .and_then(|text| text.parse().ok())
            .unwrap_or(0);
        let mut warning = None;
        let parent = if in_place {
            Self::adjust_shell_level(parent, -1, &mut warning)
        } else {
            parent
        };
        let level = Self::adjust_shell_level(parent, 1, &mut warning);
        (level.to_string(), warning)
    }

    /// bash's `adjust_shell_level`: below 0 lands on 0, past 999 restarts at
    /// 1 with a warning.
    fn adjust_shell_level(level: i64, change: i64, warning: &mut Option<String>) -> i64 {
        let next = level.saturating_add(change);
        if next < 0 {
            0
        } else if next > 999 {
            warning.get_or_insert_with(String::new).push_str(&format!(
                "bash: warning: shell level ({next}) too high, resetting to 1\n"
            ));
            1
        } else {
            next
        }
    }

    /// The simple command bash would run in place at the end of `commands`
    /// (see `NoforkScope`), as an address; 0 for none. In `( )` and `<( )` a
    /// sole command qualifies even with redirections (`sole_may_redirect`);
    /// otherwise, and for the last of a list, it must have none.
    fn nofork_candidate(commands: &[Command], sole_may_redirect: bool) -> usize {
        let simple = match commands {
            [Command::Simple(simple)] if sole_may_redirect => Some(simple),
            [.., last] => {
                Self::last_list_command(last).filter(|simple| simple.redirects.is_empty())
            }
            [] => None,
        };
        simple.map_or(0, |simple| simple as *const SimpleCommand as usize)
    }

    /// `command` itself when simple, else the simple command that ends it as
    /// the right side of a trailing `&&`, `||` or `;`. None after `&` or when
    /// run with `&`.
    fn last_list_command(command: &Command) -> Option<&SimpleCommand> {
        match command {
            Command::Simple(simple) => Some(simple),
            Command::List(list) => {
                let mut rest = list.rest.iter().rev().peekable();
                // `a;` and `a &` end in an empty sentinel after the terminator.
                if let Some((op, cmd)) = rest.peek()
                    && Self::is_empty_sentinel(cmd)
                {
                    if *op == ListOperator::Background {
                        return None;
                    }
                    rest.next();
                }
                match rest.next() {
                    Some((ListOperator::Background, _)) => None,
                    Some((_, cmd)) => Self::last_list_command(cmd),
                    None => Self::last_list_command(&list.first),
                }
            }
            _ => None,
        }
    }

    /// Start a shell context (`( )`, `$( )`, `<( )`) whose last simple
    /// command bash runs in place. A nonzero `subshell_env` replaces the
    /// current `SUBSHELL_*` bits. Pair with `leave_nofork_scope`. Out of
    /// line: it runs on every `$(...)` level.
    #[inline(never)]
    fn enter_nofork_scope(
        &mut self,
        commands: &[Command],
        sole_may_redirect: bool,
        subshell_env: u8,
    ) {
        let target = Self::nofork_candidate(commands, sole_may_redirect);
        let subshell_env = if subshell_env == 0 {
            self.nofork.subshell_env
        } else {
            subshell_env
        };
        self.push_nofork_scope(target, subshell_env);
    }

    /// Enter a scope with this target and `SUBSHELL_*` bits; traps set so
    /// far count as inherited.
    fn push_nofork_scope(&mut self, target: usize, subshell_env: u8) {
        let outer = std::mem::take(&mut self.nofork);
        self.nofork = Arc::new(NoforkScope {
            target,
            trap_base: Some(Arc::clone(&self.scoped.traps)),
            subshell_env,
            outer: Some(outer),
        });
    }

    /// Back to the scope that was current before the matching enter.
    #[inline(never)]
    fn leave_nofork_scope(&mut self) {
        if let Some(outer) = self.nofork.outer.clone() {
            self.nofork = outer;
        }
    }

    /// A job (`cmd &`) runs a simple command in place in its forked child.
    fn enter_background_nofork(&mut self, command: &Command) {
        self.nofork = Arc::new(NoforkScope {
            target: match command {
                Command::Simple(simple) => simple as *const SimpleCommand as usize,
                _ => 0,
            },
            trap_base: Some(Arc::clone(&self.scoped.traps)),
            subshell_env: 0,
            outer: None,
        });
    }

    /// Whether bash runs `command`, about to dispatch, without a fork and
    /// lowers `$SHLVL` for it: it is this context's in-place command, not in
    /// a pipeline stage, and no trap set here keeps the fork.
    #[inline(never)]
    fn nofork_eligible(&self, command: &SimpleCommand) -> bool {
        self.nofork.target == command as *const SimpleCommand as usize
            && self.nofork.subshell_env & SUBSHELL_PIPE == 0
            && !self.traps_keep_fork()
    }

    /// A trap set in this shell context that makes bash fork anyway: any
    /// EXIT or ERR trap, or a signal trap with a command. Ignored signals,
    /// DEBUG and RETURN do not count, nor handlers inherited from a parent
    /// (a forked child resets them).
    fn traps_keep_fork(&self) -> bool {
        let base = self.nofork.trap_base.as_ref();
        if base.is_some_and(|base| Arc::ptr_eq(base, &self.scoped.traps)) {
            return false;
        }
        self.scoped.traps.iter().any(|(name, action)| {
            if base.and_then(|base| base.get(name)) == Some(action) {
                return false;
            }
            match name.as_str() {
                "EXIT" | "ERR" => true,
                "DEBUG" | "RETURN" => false,
                _ => !action.is_empty(),
            }
        })
    }

    /// Reset interpreter state to what a freshly-forked `bash`/`sh` child
    /// would see: drop arrays/assoc_arrays/functions/aliases/namerefs, and
    /// keep only exported scalars in `variables`. The caller is expected to
    /// have just taken a snapshot to undo this on return. See issue #1777.
    fn reset_state_for_child_shell(&mut self, in_place: bool) -> Option<String> {
        self.line_base = 0;
        // `export SHELLOPTS`: the child starts with the parent's `set -o`
        // options (bash reads it from the environment at startup).
        let inherited_opts = self
            .var_attrs_get("SHELLOPTS")
            .contains(VarAttrs::EXPORT)
            .then(|| builtins::shellopts_value(&self.scoped.variables));
        let exported_names: Vec<String> = self
            .scoped
            .var_attrs
            .iter()
            .filter(|(_, attrs)| attrs.contains(VarAttrs::EXPORT))
            .map(|(name, _)| name.clone())
            .collect();
        let mut next_vars: HashMap<String, String> = HashMap::with_capacity(exported_names.len());
        for name in &exported_names {
            if let Some(val) = self.scoped.variables.get(name) {
                next_vars.insert(name.clone(), val.clone());
            }
        }
        // Also preserve hidden/internal markers (e.g. SHOPT_* are set later
        // by shell_opts; BASH_VERSION, IFS, etc. need to remain accessible).
        for name in [
            "BASH_VERSION",
            "BASH_VERSINFO",
            "IFS",
            "PATH",
            "PWD",
            "SHELL",
            "HOSTNAME",
            "HOME",
            "PS1",
            "PS2",
            "PS4",
            "RANDOM",
            "LINENO",
            "SECONDS",
            "UID",
            "EUID",
            "HOSTTYPE",
            "OSTYPE",
            "MACHTYPE",
        ] {
            if !next_vars.contains_key(name)
                && let Some(val) = self.scoped.variables.get(name)
            {
                next_vars.insert(name.to_string(), val.clone());
            }
        }
        // A new shell starts getopts afresh, with `$_` naming the shell and
        // a default PATH when it inherited none (`env -i bash`).
        next_vars.insert("OPTIND".to_string(), "1".to_string());
        next_vars.insert("_".to_string(), "/bin/bash".to_string());
        next_vars
            .entry("PATH".to_string())
            .or_insert_with(|| DEFAULT_PATH.to_string());
        // bash sets these at startup whatever the environment holds.
        next_vars
            .entry("PWD".to_string())
            .or_insert_with(|| self.cwd.to_string_lossy().into_owned());
        for (name, value) in [("IFS", " \t\n"), ("PS2", "> "), ("PS4", "+ ")] {
            next_vars
                .entry(name.to_string())
                .or_insert_with(|| value.to_string());
        }
        // A new shell counts itself: the child's level is one above the one it
        // inherited, and it is exported so a grandchild counts from there.
        // The inherited value is what the child would read: an exported
        // variable, else the environment (where `SHLVL=n bash` puts it), else
        // the parent's own level. bash exports SHLVL at startup; bashkit's
        // synthetic startup variables are not marked exported, so the parent's
        // plain variable stands in for that export.
        // Run in place, bash lowers the shell's own variable, exported or not.
        let inherited = if in_place {
            self.scoped.variables.get("SHLVL")
        } else {
            next_vars
                .get("SHLVL")
                .or_else(|| self.env.get("SHLVL"))
                .or_else(|| self.scoped.variables.get("SHLVL"))
        }
        .map(String::as_str);
        let (level, warning) = Self::child_shell_level(inherited, in_place);
        next_vars.insert("SHLVL".to_string(), level.clone());
        *self.vars_mut() = next_vars;
        self.add_var_attr("SHLVL", VarAttrs::EXPORT);
        self.env_mut().insert("SHLVL".to_string(), level);
        self.arrays_mut().clear();
        self.assoc_arrays_mut().clear();
        self.functions_mut().clear();
        self.namerefs_mut().clear();
        // Aliases are parse-time anyway, but a fresh `bash -c` would not have
        // user-defined aliases — drop them for consistency.
        self.scoped.aliases = Arc::new(HashMap::new());
        // A new shell has no trap handlers; signals ignored in the parent
        // stay ignored (`trap '' INT` is inherited, `trap 'x' EXIT` is not).
        let ignored: HashMap<String, String> = self
            .scoped
            .traps
            .iter()
            .filter(|(name, action)| {
                action.is_empty() && !matches!(name.as_str(), "EXIT" | "ERR" | "DEBUG" | "RETURN")
            })
            .map(|(name, action)| (name.clone(), action.clone()))
            .collect();
        self.scoped.traps = Arc::new(ignored);
        // Reset SHOPT_* flag bitfield so options from the parent don't leak.
        self.flags = BashFlags::empty();
        // After the reset: inserting syncs the flag cache.
        for name in inherited_opts.iter().flat_map(|opts| opts.split(':')) {
            if let Some(var) = builtins::set_o_var_by_name(name) {
                self.insert_variable_checked(var.to_string(), "1".to_string());
            }
        }
        warning
    }
}

/// Fd target for redirect fd-table modeling.
/// Bash processes redirects left-to-right, building an fd table where each
/// dup copies the *current* target of the source fd. This matters for
/// patterns like `2>&1 >file` where stderr must capture stdout's original
/// destination before stdout is redirected to the file.
#[derive(Clone, Debug)]
enum FdTarget {
    /// The original stdout pipe (terminal / command-substitution capture).
    Stdout,
    /// The original stderr pipe.
    Stderr,
    /// Write (truncate) to a file.
    WriteFile(PathBuf, String),
    /// Append to a file.
    AppendFile(PathBuf, String),
    /// Discard (/dev/null).
    DevNull,
    /// Closed by `exec N>&-`: a write to it fails.
    Closed,
    /// A coproc's stdin pipe (`${NAME[1]}`).
    Coproc(coproc::CoprocWriter),
}

/// Route fd1/fd2/fd3+ content to their targets. Extracted from the async
/// `apply_redirections_fd_table` to keep these locals out of the async state machine.
#[inline(never)]
fn route_fd_table_content(
    orig_stdout: &crate::StreamData,
    orig_stderr: &crate::StreamData,
    fd1: &FdTarget,
    fd2: &FdTarget,
    extra_fd_targets: &[(i32, FdTarget)],
    pending: &HashMap<i32, crate::StreamData>,
) -> (
    crate::StreamData,
    crate::StreamData,
    std::collections::HashMap<PathBuf, (crate::StreamData, bool, String)>,
) {
    let mut new_stdout = crate::StreamData::new();
    let mut new_stderr = crate::StreamData::new();
    let mut file_writes: std::collections::HashMap<PathBuf, (crate::StreamData, bool, String)> =
        std::collections::HashMap::new();

    let route = |data: &crate::StreamData,
                 target: &FdTarget,
                 fw: &mut std::collections::HashMap<PathBuf, (crate::StreamData, bool, String)>,
                 out: &mut crate::StreamData,
                 err: &mut crate::StreamData| match target {
        FdTarget::Stdout => {
            if !data.is_empty() {
                out.append(data);
            }
        }
        FdTarget::Stderr => {
            if !data.is_empty() {
                err.append(data);
            }
        }
        // A closed descriptor accepts nothing.
        FdTarget::DevNull | FdTarget::Closed => {}
        FdTarget::Coproc(w) => w.write(data.as_bytes()),
        FdTarget::WriteFile(p, d) => {
            let entry = fw
                .entry(p.clone())
                .or_insert_with(|| (crate::StreamData::new(), false, d.clone()));
            if !data.is_empty() {
                entry.0.append(data);
            }
        }
        FdTarget::AppendFile(p, d) => {
            let entry = fw
                .entry(p.clone())
                .or_insert_with(|| (crate::StreamData::new(), true, d.clone()));
            if !data.is_empty() {
                entry.0.append(data);
            }
        }
    };

    route(
        orig_stdout,
        fd1,
        &mut file_writes,
        &mut new_stdout,
        &mut new_stderr,
    );
    route(
        orig_stderr,
        fd2,
        &mut file_writes,
        &mut new_stdout,
        &mut new_stderr,
    );

    // `N>file` creates (or truncates) the file even when nothing writes to
    // fd N.
    for (_, target) in extra_fd_targets {
        route(
            &crate::StreamData::new(),
            target,
            &mut file_writes,
            &mut new_stdout,
            &mut new_stderr,
        );
    }

    // Route pending fd3+ output
    for (fd_num, data) in pending {
        let target = extra_fd_targets
            .iter()
            .find(|(n, _)| n == fd_num)
            .map(|(_, t)| t);
        if let Some(target) = target {
            route(
                data,
                target,
                &mut file_writes,
                &mut new_stdout,
                &mut new_stderr,
            );
        }
    }

    (new_stdout, new_stderr, file_writes)
}

impl Interpreter {
    /// Execute a sequence of commands (with errexit checking)
    async fn execute_command_sequence(&mut self, commands: &[Command]) -> Result<ExecResult> {
        self.execute_command_sequence_impl(commands, true).await
    }

    /// Execute a sequence of commands used as a condition (no errexit checking)
    /// Used for if/while/until conditions where failure is expected
    async fn execute_condition_sequence(&mut self, commands: &[Command]) -> Result<ExecResult> {
        self.condition_sequence_depth += 1;
        let result = self.execute_command_sequence_impl(commands, false).await;
        self.condition_sequence_depth -= 1;
        result
    }

    fn is_in_condition_sequence(&self) -> bool {
        self.condition_sequence_depth > 0
    }

    /// Execute commands whose stdout is captured by command substitution.
    /// Streaming callbacks must stay suspended so hidden capture output cannot
    /// leak to observers before it is assigned or otherwise consumed.
    async fn execute_capture_only_sequence(&mut self, commands: &[Command]) -> Result<ExecResult> {
        let saved_callback = self.output_callback.take();
        let result = self.execute_command_sequence(commands).await;
        self.output_callback = saved_callback;
        result
    }

    /// Execute a sequence of commands with optional errexit checking
    async fn execute_command_sequence_impl(
        &mut self,
        commands: &[Command],
        check_errexit: bool,
    ) -> Result<ExecResult> {
        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        let mut exit_code = 0;
        let mut last_errexit_suppressed = false;

        for command in commands {
            let emit_before = self.output_emit_count;
            self.sequence_accum = (stdout.len(), stderr.len());
            let mut result = self.execute_command(command).await?;
            if self.merge_stderr {
                Self::merge_stderr_into_stdout(&mut result);
            }
            self.reap_coprocs();
            self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                .await?;
            if self.retain_streamed_output() {
                stdout.append(&result.stdout);
                stderr.append(&result.stderr);
            }
            exit_code = result.exit_code;
            self.last_exit_code = exit_code;

            // Propagate control flow
            if result.control_flow != ControlFlow::None {
                return Ok(ExecResult {
                    stdout,
                    stderr,
                    exit_code,
                    control_flow: result.control_flow,
                    ..Default::default()
                });
            }

            // Check for errexit (set -e) if enabled.
            // Suppression is decided by the callee and surfaced through
            // result.errexit_suppressed (e.g. AND-OR lists).
            let suppress = result.errexit_suppressed;
            if check_errexit && self.errexit_active() && exit_code != 0 && !suppress {
                self.errexit_fired = true;
                return Ok(ExecResult {
                    stdout,
                    stderr,
                    exit_code,
                    control_flow: ControlFlow::None,
                    ..Default::default()
                });
            }
            last_errexit_suppressed = suppress && exit_code != 0;
        }

        Ok(ExecResult {
            stdout,
            stderr,
            exit_code,
            control_flow: ControlFlow::None,
            errexit_suppressed: last_errexit_suppressed,
            ..Default::default()
        })
    }

    /// Execute a pipeline (cmd1 | cmd2 | cmd3)
    ///
    /// Leading stages that are single commands run first, one after another,
    /// handing over complete output. From the first stage that runs shell
    /// code (a loop, group, function), the rest run concurrently over
    /// bounded pipes (`execute_streaming_stages`), unless concurrency is off.
    // THREAT[TM-DOS-089]: keep pipeline state out of execute_command's poll
    // frame, which repeats even for simple commands inside nested $(...).
    // Cancellation guards make that state large enough to overflow instrumented
    // test stacks when it is embedded in every command future.
    fn execute_pipeline<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // Kept small: recursive pipelines (`f() { f | f; }`) nest this poll
            // frame once per level, so bookkeeping lives in sync helpers.
            let (stream_from, lastpipe) = self.plan_pipeline(pipeline);
            let mut acc = PipelineAcc::default();
            let mut stdin_data: Option<crate::StreamData> = None;
            let count = pipeline.commands.len();
            // bash runs DEBUG for each simple-command stage from the shell
            // itself, ahead of the stages' output; never inside a stage.
            let mut debug = if count > 1 && self.has_debug_trap() {
                self.pipeline_debug_traps(pipeline).await
            } else {
                None
            };
            if let Some(r) = DebugTrapOutput::exit_result(&mut debug) {
                return Ok(r);
            }
            let saved_dormant = self.debug_trap_dormant;
            self.debug_trap_dormant |= count > 1;
            acc.merge = self.merge_stderr;
            self.merge_stderr &= count == 1;

            for (i, command) in pipeline.commands.iter().enumerate() {
                if stream_from == Some(i) {
                    let stages = self
                        .execute_streaming_group(
                            &pipeline.commands[i..],
                            stdin_data.take(),
                            lastpipe,
                        )
                        .await;
                    let stages = match stages {
                        Ok(s) => s,
                        Err(e) => {
                            self.debug_trap_dormant = saved_dormant;
                            return Err(e);
                        }
                    };
                    for result in stages {
                        self.absorb_stage(&mut acc, result, true);
                    }
                    break;
                }
                let is_last = i == count - 1;
                // Every stage of a multi-command pipeline runs in a subshell,
                // except the last one under `shopt -s lastpipe` (bash, job
                // control off).
                let subshell = count > 1 && !(is_last && lastpipe);
                // A non-last stage's stdout feeds the next stage, never the
                // streaming observer.
                let saved_callback = if is_last {
                    None
                } else {
                    self.output_callback.take()
                };
                let result = match self.enter_pipeline_stage(command, stdin_data.take(), subshell) {
                    Ok((scope, stdin)) => {
                        let guard = PipelineStageGuard::new(self, scope);
                        let result = match command {
                            Command::Simple(simple) => {
                                self.execute_simple_command(simple, stdin).await
                            }
                            _ => {
                                self.err_trap_skip_stage = count > 1;
                                self.execute_command(command).await
                            }
                        };
                        guard.complete(self, result)
                    }
                    Err(e) => Err(e),
                };
                if let Some(cb) = saved_callback {
                    self.output_callback = Some(cb);
                }
                let result = match result {
                    Ok(r) => r,
                    Err(e) => {
                        self.debug_trap_dormant = saved_dormant;
                        return Err(e);
                    }
                };
                stdin_data = self.absorb_stage(&mut acc, result, is_last);
            }
            self.debug_trap_dormant = saved_dormant;
            DebugTrapOutput::prepend_opt(debug, Ok(self.finish_pipeline(pipeline, acc)))
        })
    }

    /// DEBUG before each simple-command stage of a pipeline, at its line.
    #[allow(clippy::type_complexity)]
    fn pipeline_debug_traps<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Option<Box<DebugTrapOutput>>> + Send + 'a>,
    > {
        Box::pin(async move {
            let mut out: Option<Box<DebugTrapOutput>> = None;
            for command in &pipeline.commands {
                let Command::Simple(simple) = command else {
                    continue;
                };
                self.current_line = self.line_at(simple.span.line());
                Self::absorb_debug(&mut out, self.debug_trap_now().await);
                if out.as_ref().is_some_and(|d| d.exit.is_some()) {
                    break;
                }
            }
            out
        })
    }

    /// Where streaming starts (first stage that runs shell code), and lastpipe.
    #[inline(never)]
    fn plan_pipeline(&self, pipeline: &Pipeline) -> (Option<usize>, bool) {
        let count = pipeline.commands.len();
        let lastpipe = self
            .scoped
            .variables
            .get("SHOPT_lastpipe")
            .is_some_and(|v| v == "1");
        let stream_from = if count > 1
            && self.concurrent_jobs
            && self.counters.subshell_depth < MAX_STREAMING_NESTING
        {
            pipeline.commands[..count - 1]
                .iter()
                .position(|c| !self.is_single_command_stage(c))
        } else {
            None
        };
        (stream_from, lastpipe)
    }

    /// Run a concurrent tail of a pipeline as one subshell nesting level.
    fn execute_streaming_group<'a>(
        &'a mut self,
        commands: &'a [Command],
        stdin: Option<crate::StreamData>,
        lastpipe: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<ExecResult>>> + Send + 'a>>
    {
        Box::pin(async move {
            // THREAT[TM-DOS-124]: concurrent stages nest like subshells
            // (`f() { f | f; }`), so the whole group counts as one level.
            self.counters.push_subshell(&self.limits)?;
            let stages = self
                .execute_streaming_stages(commands, stdin, lastpipe)
                .await;
            self.counters.pop_subshell();
            stages
        })
    }

    /// Record a finished stage; returns its stdout as the next stage's stdin
    /// (the last stage's stdout stays in the accumulator).
    #[inline(never)]
    fn absorb_stage(
        &self,
        acc: &mut PipelineAcc,
        mut result: ExecResult,
        is_last: bool,
    ) -> Option<crate::StreamData> {
        acc.statuses.push(result.exit_code);
        append_stage_stderr(
            &mut acc.stderr,
            &mut acc.stderr_truncated,
            &result,
            self.limits.max_stderr_bytes,
        );
        if is_last {
            acc.last = result;
            return None;
        }
        Some(std::mem::take(&mut result.stdout))
    }

    /// PIPESTATUS, pipefail and `!` for a finished pipeline.
    #[inline(never)]
    fn finish_pipeline(&mut self, pipeline: &Pipeline, acc: PipelineAcc) -> ExecResult {
        let PipelineAcc {
            merge,
            statuses: pipe_statuses,
            stderr,
            stderr_truncated,
            last: mut last_result,
        } = acc;
        self.merge_stderr = merge;
        last_result.stderr = stderr;
        last_result.stderr_truncated |= stderr_truncated;

        // Store PIPESTATUS array
        if pipe_statuses.len() > 1 {
            self.pipeline_log.record(&pipeline.commands, &pipe_statuses);
        }
        self.pipestatus = pipe_statuses.clone();
        let mut ps_arr = HashMap::new();
        for (i, code) in pipe_statuses.iter().enumerate() {
            ps_arr.insert(i, code.to_string());
        }
        self.arrays_mut().insert("PIPESTATUS".to_string(), ps_arr);

        // pipefail: return rightmost non-zero exit code from pipeline
        if self.is_pipefail()
            && let Some(&nonzero) = pipe_statuses.iter().rev().find(|&&c| c != 0)
        {
            last_result.exit_code = nonzero;
        }

        // Handle negation
        if pipeline.negated {
            last_result.exit_code = if last_result.exit_code == 0 { 1 } else { 0 };
        }
        last_result
    }

    /// A stage that is one builtin call produces its whole output at once,
    /// so running it before the next stage loses nothing. Anything that can
    /// run shell code (loops, groups, functions, `eval`, nested shells)
    /// streams instead.
    fn is_single_command_stage(&self, command: &Command) -> bool {
        let Command::Simple(simple) = command else {
            return false;
        };
        let name = match simple.name.parts.as_slice() {
            [] => return true,
            [WordPart::Literal(name)] => name.as_str(),
            _ => return false,
        };
        !self.is_streaming_host_command(name)
            && !matches!(name, "eval" | "source" | "." | "bash" | "sh")
            && !self.scoped.functions.contains_key(name)
            && !self.scoped.aliases.contains_key(name)
            && !Self::streams_stdout(simple)
    }

    /// Builtins that write their stdout to a pipeline as they go
    /// (`Context::stdout_stream`): generators whose output is unbounded or
    /// large, so `yes | head -1` and `seq 1000000 | head -1` stop at the
    /// first line with SIGPIPE instead of running into the output caps.
    fn streams_stdout(simple: &SimpleCommand) -> bool {
        matches!(
            simple.name.parts.as_slice(),
            [WordPart::Literal(name)]
                if matches!(name.as_str(), "yes" | "seq" | "cat" | "grep" | "tr")
        )
    }

    /// Streaming stages that also read their stdin pipe incrementally
    /// (`Context::stdin_stream`), so `loop | grep y | head -1` stops early.
    /// They consume incrementally; options such as `tr -s` explicitly collect
    /// budget-owned whole input. Grep summaries can delay output, while -q
    /// still exits after its first matching record.
    fn streams_stdin(name: &str) -> bool {
        matches!(name, "cat" | "grep" | "tr")
    }

    fn execution_output(&self) -> Option<Arc<crate::execution::ExecutionOutput>> {
        self.current_execution_extensions()
            .get::<Arc<crate::execution::ExecutionOutput>>()?
            .try_with(Arc::clone)
            .ok()
    }

    /// Caller-delivered bytes belong to output pumps, not every list/loop.
    fn retain_streamed_output(&self) -> bool {
        self.output_callback.is_none()
            || self.pipe_out.is_some()
            || self.execution_output().is_none()
            || !self.exec_fd_table.is_empty()
            || self.pending_fd_capture_depth > 0
    }

    fn is_streaming_host_command(&self, name: &str) -> bool {
        self.host_builtins
            .as_ref()
            .and_then(|r| r.lookup(name))
            .or_else(|| self.builtins.get(name).cloned())
            .is_some_and(|b| b.streams_io())
    }

    /// Run `commands` (the tail of a pipeline) concurrently: every stage but
    /// the last on a forked shell writing into a bounded [`pipe::Pipe`], the
    /// last one here (a subshell unless `lastpipe`) so its output streams.
    /// A stage whose reader went away ends with 141 (SIGPIPE). Returns one
    /// result per stage; stdout is set only on the last.
    async fn execute_streaming_stages(
        &mut self,
        commands: &[Command],
        stdin: Option<crate::StreamData>,
        lastpipe: bool,
    ) -> Result<Vec<ExecResult>> {
        type StageFuture<'a> =
            std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>>;
        let (last, producers) = commands.split_last().expect("pipeline tail");
        // THREAT[TM-DOS-124]: width, fork storage and construction work are
        // admitted before allocation. Every retained producer counts against
        // the same cap as background jobs, including descendants.
        self.execution_budget.check()?;
        let _slots = self
            .jobs
            .try_claim_many(self.limits.max_background_jobs, producers.len())
            .ok_or(LimitExceeded::MaxConcurrentJobs(
                self.limits.max_background_jobs,
            ))?;
        let mut input: Option<Arc<pipe::Pipe>> = None;
        let mut stages =
            crate::limits::BudgetedVec::<(
                StageFuture<'_>,
                crate::limits::ExecutionBudgetLease,
                crate::limits::ExecutionBudgetLease,
            )>::try_with_capacity(Some(&self.execution_budget), producers.len())?;
        for (k, command) in producers.iter().enumerate() {
            let inherited_stdin = if k == 0 {
                stdin.as_ref().or(self.pipeline_stdin.as_ref())
            } else {
                None
            };
            let fork_storage = self.pipeline_fork_storage(inherited_stdin)?;
            let pipe = pipe::Pipe::new_admitted(&self.execution_budget)?;
            let mut child = self.fork_for_job();
            if k == 0 {
                // First stage reads what this shell would read.
                child.pipeline_stdin = stdin.clone().or_else(|| self.pipeline_stdin.clone());
                if stdin.is_none() {
                    child.pipe_in = self.pipe_in.clone();
                }
            } else {
                child.pipe_in = input.clone();
            }
            let sink = Arc::clone(&pipe);
            child.output_callback = Some(Box::new(move |out, _err| {
                sink.write(out.as_bytes());
            }));
            child.pipe_out = Some(Arc::clone(&pipe));
            // The pipeline as a whole fires ERR, not its stages.
            child.err_trap_skip_stage = true;
            Arc::make_mut(&mut child.nofork).subshell_env = SUBSHELL_PIPE;
            let write_end = pipe::WriteEnd(Arc::clone(&pipe));
            let read_end = input.take().map(pipe::ReadEnd);
            if matches!(
                command,
                Command::Simple(_) | Command::Compound(CompoundCommand::Subshell(_), _)
            ) {
                // Simple-command stages do not count as a subshell level; a
                // `( )` stage counts itself once.
                child.bash_subshell = self.bash_subshell;
            }
            let command_handles_pipe = matches!(command, Command::Simple(c)
                if matches!(c.name.parts.as_slice(), [WordPart::Literal(n)] if child.is_streaming_host_command(n)));
            let future = async move {
                let _read_end = read_end;
                if let Command::Simple(simple) = command
                    && Self::streams_stdout(simple)
                {
                    child.stream_stdout_command = Some(simple as *const SimpleCommand as usize);
                }
                let jobs = Arc::clone(&child.jobs);
                let result = jobs::with_jobs(&jobs, child.execute_command(command)).await;
                jobs.finish_all().await;
                let (out, err) = jobs.lock().take_finished_output();
                let mut r = result?;
                r.stdout.append(&out);
                r.stderr.append(&err);
                // Output not yet sent at a command boundary goes now.
                let sent = child.output_stream_stdout_bytes;
                if r.stdout.len() > sent {
                    write_end.0.write(&r.stdout.as_bytes()[sent..]);
                }
                if write_end.0.is_broken() && !command_handles_pipe {
                    r.exit_code = 141;
                } else if let ControlFlow::Exit(code) | ControlFlow::Return(code) = r.control_flow {
                    r.exit_code = code;
                }
                r.control_flow = ControlFlow::None;
                r.stdout = crate::StreamData::new();
                Ok(r)
            };
            let future_storage = self
                .execution_budget
                .lease_bytes(std::mem::size_of_val(&future))?;
            stages.try_push((Box::pin(future), fork_storage, future_storage))?;
            input = Some(pipe);
        }

        let mut done = crate::limits::BudgetedVec::try_with_capacity(
            Some(&self.execution_budget),
            stages.len(),
        )?;
        for _ in 0..stages.len() {
            done.try_push(None)?;
        }
        // The last stage reads the last pipe through `pipe_in`.
        let last_pipe = input.expect("at least one producer");
        let saved_pipe_in = self.pipe_in.replace(Arc::clone(&last_pipe));
        let saved_stdin = self.pipeline_stdin.take();
        let mut read_end = Some(pipe::ReadEnd(last_pipe));
        let mut last_done: Option<Result<ExecResult>> = None;
        {
            let mut last_fut = Box::pin(async {
                let (scope, stdin) = self.enter_pipeline_stage(last, None, !lastpipe)?;
                let guard = PipelineStageGuard::new(self, scope);
                let result = match last {
                    Command::Simple(simple) => self.execute_simple_command(simple, stdin).await,
                    _ => {
                        self.err_trap_skip_stage = true;
                        self.execute_command(last).await
                    }
                };
                guard.complete(self, result)
            });
            // Readers first (last stage, then upstream), so each blocks on
            // its pipe before the writer feeding it runs.
            std::future::poll_fn(|cx| {
                if last_done.is_none()
                    && let std::task::Poll::Ready(r) = last_fut.as_mut().poll(cx)
                {
                    // Nobody reads any more: writers get SIGPIPE.
                    read_end = None;
                    last_done = Some(r);
                    cx.waker().wake_by_ref();
                }
                for ((stage, _fork_storage, _future_storage), slot) in
                    stages.iter_mut().zip(done.iter_mut()).rev()
                {
                    if slot.is_none()
                        && let std::task::Poll::Ready(r) = stage.as_mut().poll(cx)
                    {
                        *slot = Some(r);
                    }
                }
                let failed = done.iter().any(|d| matches!(d, Some(Err(_))))
                    || matches!(last_done, Some(Err(_)));
                if failed || (last_done.is_some() && done.iter().all(Option::is_some)) {
                    std::task::Poll::Ready(())
                } else {
                    std::task::Poll::Pending
                }
            })
            .await;
        }
        drop(read_end);
        self.pipe_in = saved_pipe_in;
        self.pipeline_stdin = saved_stdin;
        drop(stages);

        let mut results = Vec::with_capacity(done.len() + 1);
        let (done, _done_storage) = done.into_parts();
        for d in done {
            results.push(d.unwrap_or_else(|| Ok(ExecResult::ok(String::new())))?);
        }
        results.push(last_done.unwrap_or_else(|| Ok(ExecResult::ok(String::new())))?);
        Ok(results)
    }

    /// At a command boundary in a forked pipeline stage: wait while the
    /// pipe is full; once a write found the reader gone, end the stage
    /// with 141 like SIGPIPE.
    async fn wait_for_pipe_room(&mut self) -> Option<ExecResult> {
        let pipe = Arc::clone(self.pipe_out.as_ref()?);
        if pipe.is_broken() {
            return Some(ExecResult {
                exit_code: 141,
                control_flow: ControlFlow::Exit(141),
                ..Default::default()
            });
        }
        pipe.writable().await;
        None
    }

    /// Before command `name` takes its stdin from a streaming pipe, pull what
    /// it needs into `pipeline_stdin`: one line for `read`, the requested
    /// lines/bytes for `head` (then close the pipe so the writer gets
    /// SIGPIPE), nothing for commands that never read stdin, and everything
    /// up to end of input otherwise.
    async fn fill_stdin_from_pipe(&mut self, name: &str, args: &[String]) {
        let Some(pipe) = self.pipe_in.clone() else {
            return;
        };
        let want = stdin_demand(name, args);
        if want == StdinDemand::Nothing {
            return;
        }
        let mut buf = self.pipeline_stdin.take().unwrap_or_default().into_bytes();
        let eof = want.read_from(&pipe, &mut buf).await;
        if eof || matches!(want, StdinDemand::All) {
            self.pipe_in = None;
        } else if matches!(want, StdinDemand::Lines(_) | StdinDemand::Bytes(_)) {
            // `head` exits after its input: the writer sees a closed pipe.
            pipe.close_read();
            self.pipe_in = None;
        }
        self.pipeline_stdin = Some(buf.into());
    }

    /// Start a pipeline stage: with `subshell`, snapshot state so changes
    /// (variables, cwd, options, fds) roll back in `exit_pipeline_stage` and
    /// `exit`/`return` end only the stage. The caller awaits the stage's
    /// command itself (`execute_simple_command` / `execute_command`, both
    /// boxed): recursive pipelines (`f() { f | f; }`) then add no extra poll
    /// frame per level.
    fn enter_pipeline_stage(
        &mut self,
        command: &Command,
        stdin: Option<crate::StreamData>,
        subshell: bool,
    ) -> Result<(PipelineStageScope, Option<crate::StreamData>)> {
        if matches!(command, Command::Simple(_)) {
            self.execution_budget.consume_work(1)?;
            self.counters.tick_command(&self.limits)?;
        }
        let saved = subshell.then(|| {
            (
                self.snapshot_subshell_state(),
                self.call_stack.clone(),
                self.coproc_buffers.clone(),
            )
        });
        // bash counts compound stages, not simple commands (`echo
        // $BASH_SUBSHELL | cat` prints 0, `{ echo $BASH_SUBSHELL; } | cat` 1).
        // A `( )` stage reuses the stage fork, so it is counted once.
        if subshell
            && !matches!(
                command,
                Command::Simple(_) | Command::Compound(CompoundCommand::Subshell(_), _)
            )
        {
            self.bash_subshell += 1;
        }
        if subshell {
            self.enter_subshell_pid();
            self.enter_subshell_err_scope();
            self.push_nofork_scope(self.nofork.target, SUBSHELL_PIPE);
        }
        let mut scope = PipelineStageScope {
            saved,
            prev_pipeline_stdin: None,
        };
        if matches!(command, Command::Simple(_)) {
            return Ok((scope, stdin));
        }
        // Compound commands, lists, etc. in pipeline:
        // set pipeline_stdin so inner commands (read, cat, etc.) can consume it
        scope.prev_pipeline_stdin = Some(std::mem::replace(&mut self.pipeline_stdin, stdin));
        Ok((scope, None))
    }

    fn exit_pipeline_stage(
        &mut self,
        scope: PipelineStageScope,
        result: Result<ExecResult>,
    ) -> Result<ExecResult> {
        if let Some(prev) = scope.prev_pipeline_stdin {
            self.pipeline_stdin = prev;
        }
        let Some((snap, call_stack, coproc)) = scope.saved else {
            return result;
        };
        self.restore_subshell_state(snap);
        self.leave_nofork_scope();
        self.call_stack = call_stack;
        self.coproc_buffers = coproc;
        let mut result = self.abort_line_on_error(result)?;
        if let ControlFlow::Exit(code) | ControlFlow::Return(code) = result.control_flow {
            result.exit_code = code;
            result.control_flow = ControlFlow::None;
        }
        if result.control_flow == ControlFlow::Abort {
            result.control_flow = ControlFlow::None;
        }
        result.errexit_suppressed = false;
        Ok(result)
    }

    /// Check if a command is the empty sentinel produced by the parser for trailing `&`.
    fn is_empty_sentinel(cmd: &Command) -> bool {
        if let Command::Simple(sc) = cmd {
            let name_is_empty = sc.name.parts.len() == 1
                && matches!(&sc.name.parts[0], WordPart::Literal(s) if s.is_empty());
            name_is_empty
                && sc.args.is_empty()
                && sc.redirects.is_empty()
                && sc.assignments.is_empty()
        } else {
            false
        }
    }

    /// Run a command as a background job (`cmd &`).
    ///
    /// With concurrent jobs (the default) the command runs on a forked shell
    /// as a job future driven alongside the foreground (see `jobs.rs`). It is
    /// polled once right away, so a job that never blocks finishes here and
    /// its output is emitted in order, as before. Sequential mode runs the
    /// command to completion here.
    async fn spawn_in_background(
        &mut self,
        cmd: &Command,
        parent_stdout: &mut crate::StreamData,
        parent_stderr: &mut crate::StreamData,
    ) -> Result<()> {
        let text = describe_command(cmd);
        let emit_before = self.output_emit_count;
        let finished = if self.concurrent_jobs {
            // THREAT[TM-DOS-122]: cap live jobs.
            // The cap is session-wide (nested jobs share it) and a job is a
            // subshell for nesting depth, so `f(){ f & f & }; f` stays bounded.
            let slot = self.jobs.try_claim(self.limits.max_background_jobs);
            let mut child = self.fork_for_job();
            let depth_ok = child.counters.push_subshell(&child.limits).is_ok();
            let Some(slot) = slot.filter(|_| depth_ok) else {
                // bash reports fork failures with the shell name only (no line).
                let msg = format!(
                    "{}: fork: retry: Resource temporarily unavailable (max {} background jobs, {} nested)\n",
                    self.diag_name(),
                    self.limits.max_background_jobs,
                    self.limits.max_subshell_depth
                );
                parent_stderr.append(&crate::StreamData::from(msg));
                self.last_exit_code = 1;
                return Ok(());
            };
            let cmd = cmd.clone();
            let job_diag = self.diag_prefix();
            let mut fut: jobs::JobFuture = Box::pin(async move {
                let _slot = slot;
                child.enter_background_nofork(&cmd);
                let jobs = Arc::clone(&child.jobs);
                let result = jobs::with_jobs(&jobs, child.execute_command(&cmd)).await;
                jobs.finish_all().await;
                let (out, err) = jobs.lock().take_finished_output();
                match result {
                    Ok(mut r) => {
                        r.stdout.append(&out);
                        r.stderr.append(&err);
                        if let ControlFlow::Exit(code) = r.control_flow {
                            r.exit_code = code;
                        }
                        r.control_flow = ControlFlow::None;
                        r
                    }
                    Err(e) => ExecResult::err(format!("{job_diag}{e}\n"), 1),
                }
            });
            match std::future::poll_fn(|cx| std::task::Poll::Ready(fut.as_mut().poll(cx))).await {
                std::task::Poll::Ready(result) => Some(result),
                std::task::Poll::Pending => {
                    let (_, pid) = self.jobs.lock().spawn_running(text.clone(), fut);
                    self.last_bg_pid = Some(pid.to_string());
                    None
                }
            }
        } else {
            let saved_nofork = std::mem::take(&mut self.nofork);
            self.enter_background_nofork(cmd);
            let result = self.execute_command(cmd).await;
            self.nofork = saved_nofork;
            Some(result?)
        };

        if let Some(result) = finished {
            self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                .await?;
            // Emit output immediately (background output goes to terminal in real bash)
            parent_stdout.append(&result.stdout);
            parent_stderr.append(&result.stderr);
            let (_, pid) = self.jobs.lock().spawn_finished(text, result);
            self.last_bg_pid = Some(pid.to_string());
        }

        // Background commands always return exit code 0 to the parent.
        // The real exit code lives in the job table for `wait` to read.
        self.last_exit_code = 0;
        Ok(())
    }

    /// Output of background jobs that finished since the last report.
    fn take_finished_job_output(&self) -> (crate::StreamData, crate::StreamData) {
        self.jobs.lock().take_finished_output()
    }

    /// Execute a command list (cmd1 && cmd2 || cmd3)
    #[allow(unused_assignments)] // control_flow may be set but overwritten
    /// `route`: this list is a top-level command; route each element's output
    /// through the `exec` fd table as it finishes (see `route_top_list`).
    async fn execute_list(&mut self, list: &CommandList, route: bool) -> Result<ExecResult> {
        let mut stdout = crate::StreamData::new();
        let mut stderr = crate::StreamData::new();
        let mut exit_code;
        let mut control_flow;
        let mut exit_code_from_conditional_context = false;

        // Determine if the first command should run in the background.
        // The `&` terminator for first appears as rest[0].op == Background.
        let first_is_bg = matches!(list.rest.first(), Some((ListOperator::Background, _)));

        if first_is_bg {
            // Boxed: the job path holds a forked Interpreter across an await,
            // which would otherwise bloat every recursive execute_list frame.
            Box::pin(self.spawn_in_background(&list.first, &mut stdout, &mut stderr)).await?;
            exit_code = 0;
            control_flow = ControlFlow::None;
            exit_code_from_conditional_context = false;
        } else {
            let emit_before = self.output_emit_count;
            let emitted_before = (
                self.output_stream_stdout_bytes,
                self.output_stream_stderr_bytes,
            );
            self.sequence_accum = (0, 0);
            // A non-final `&&`/`||` element runs with errexit ignored.
            let conditional = list
                .rest
                .first()
                .is_some_and(|(op, _)| matches!(op, ListOperator::And | ListOperator::Or));
            self.condition_sequence_depth += usize::from(conditional);
            let result = self.execute_command(&list.first).await;
            self.condition_sequence_depth -= usize::from(conditional);
            let mut result = result?;
            if route {
                Box::pin(self.route_exec_output(
                    &mut result,
                    emitted_before,
                    (0, 0),
                    Self::command_name(&list.first),
                ))
                .await?;
            }
            if self.merge_stderr {
                Self::merge_stderr_into_stdout(&mut result);
            }
            self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                .await?;
            if route {
                Box::pin(self.flush_exec_passthrough(&mut result)).await?;
            }
            if self.retain_streamed_output() {
                stdout.append(&result.stdout);
                stderr.append(&result.stderr);
            }
            exit_code = result.exit_code;
            self.last_exit_code = exit_code;
            control_flow = result.control_flow;
            exit_code_from_conditional_context = result.errexit_suppressed
                || list
                    .rest
                    .first()
                    .is_some_and(|(op, _)| matches!(op, ListOperator::And | ListOperator::Or));

            // If first command signaled control flow, return immediately
            if control_flow != ControlFlow::None {
                return Ok(ExecResult {
                    stdout,
                    stderr,
                    exit_code,
                    control_flow,
                    ..Default::default()
                });
            }
        }

        for (i, (op, cmd)) in list.rest.iter().enumerate() {
            // Skip empty sentinel commands (produced by trailing `&`)
            if Self::is_empty_sentinel(cmd) {
                continue;
            }

            // Check if this command is followed by another && / || operator.
            // POSIX `errexit` suppression applies to non-final commands in an
            // AND-OR list; the final executed command can still abort on failure.
            let current_is_conditional = matches!(op, ListOperator::And | ListOperator::Or);

            // Determine if THIS command should be backgrounded.
            // A command is backgrounded when the NEXT separator is Background
            // (the `&` terminates the current command).
            let should_background =
                matches!(list.rest.get(i + 1), Some((ListOperator::Background, _)));

            // Check errexit before executing next semicolon-separated command:
            // if previous command failed outside conditional context, exit now.
            let should_check_errexit = matches!(op, ListOperator::Semicolon)
                && self.errexit_active()
                && exit_code != 0
                && !exit_code_from_conditional_context;

            if should_check_errexit {
                return Ok(ExecResult {
                    stdout,
                    stderr,
                    exit_code,
                    control_flow: ControlFlow::None,
                    ..Default::default()
                });
            }

            let should_execute = match op {
                ListOperator::And => exit_code == 0,
                ListOperator::Or => exit_code != 0,
                ListOperator::Semicolon | ListOperator::Background => true,
            };

            if !should_execute && current_is_conditional {
                // Short-circuited && / ||: the carried exit code came from
                // a conditional chain, so errexit must not fire on it.
                exit_code_from_conditional_context = true;
            }

            if should_execute {
                if should_background {
                    Box::pin(self.spawn_in_background(cmd, &mut stdout, &mut stderr)).await?;
                    exit_code = 0;
                    exit_code_from_conditional_context = false;
                } else {
                    let emit_before = self.output_emit_count;
                    let emitted_before = (
                        self.output_stream_stdout_bytes,
                        self.output_stream_stderr_bytes,
                    );
                    self.sequence_accum = (stdout.len(), stderr.len());
                    let followed_by_conditional_op =
                        list.rest.get(i + 1).is_some_and(|(op, cmd)| {
                            !Self::is_empty_sentinel(cmd)
                                && matches!(op, ListOperator::And | ListOperator::Or)
                        });
                    self.condition_sequence_depth += usize::from(followed_by_conditional_op);
                    let result = self.execute_command(cmd).await;
                    self.condition_sequence_depth -= usize::from(followed_by_conditional_op);
                    let mut result = result?;
                    if route {
                        Box::pin(self.route_exec_output(
                            &mut result,
                            emitted_before,
                            (0, 0),
                            Self::command_name(cmd),
                        ))
                        .await?;
                    }
                    if self.merge_stderr {
                        Self::merge_stderr_into_stdout(&mut result);
                    }
                    self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
                        .await?;
                    if route {
                        Box::pin(self.flush_exec_passthrough(&mut result)).await?;
                    }
                    if self.retain_streamed_output() {
                        stdout.append(&result.stdout);
                        stderr.append(&result.stderr);
                    }
                    exit_code = result.exit_code;
                    self.last_exit_code = exit_code;
                    control_flow = result.control_flow;
                    // Bash suppresses errexit for AND-OR list elements except the
                    // command following the final &&/|| operator.
                    exit_code_from_conditional_context =
                        followed_by_conditional_op || result.errexit_suppressed;

                    // If command signaled control flow, return immediately
                    if control_flow != ControlFlow::None {
                        return Ok(ExecResult {
                            stdout,
                            stderr,
                            exit_code,
                            control_flow,
                            ..Default::default()
                        });
                    }
                }
            }
        }

        // Final errexit check for the last command. A non-zero status only
        // remains suppressed when it was carried from a short-circuited or
        // non-final AND-OR list element; a failing final &&/|| command exits.
        let should_final_errexit_check = self.errexit_active()
            && exit_code != 0
            && !exit_code_from_conditional_context
            && !self.is_in_condition_sequence();

        if should_final_errexit_check {
            return Ok(ExecResult {
                stdout,
                stderr,
                exit_code,
                control_flow: ControlFlow::None,
                ..Default::default()
            });
        }

        Ok(ExecResult {
            stdout,
            stderr,
            exit_code,
            control_flow: ControlFlow::None,
            errexit_suppressed: exit_code_from_conditional_context && exit_code != 0,
            ..Default::default()
        })
    }

    /// Process variable assignments from a command's prefix (e.g. `VAR=val cmd`).
    ///
    /// `has_command`: the assignments prefix a command (`x=1 cmd`). Bash then
    /// stores them without `-i`/`-l`/`-u`, and a readonly target only prints
    /// an error (returned for stderr); a bare assignment to a readonly
    /// variable abandons the line instead.
    fn process_command_assignments<'a>(
        &'a mut self,
        assignments: &'a [Assignment],
        has_command: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String>> + Send + 'a>> {
        // Boxed: keeps this future off execute_simple_command's frame, which
        // repeats per function nesting level (THREAT[TM-DOS-020]).
        Box::pin(async move {
            let mut stderr = String::new();
            self.temp_path = has_command && assignments.iter().any(|a| a.name == "PATH");
            for assignment in assignments {
                // `a[1]=x cmd`: bash refuses an element as a temporary
                // binding, without expanding its value, and runs `cmd`.
                if has_command && let Some(index) = &assignment.index {
                    stderr.push_str(&self.diag(format!(
                        "`{}[{index}]': not a valid identifier\n",
                        assignment.name
                    )));
                    continue;
                }
                match &assignment.value {
                    AssignmentValue::Scalar(word) => {
                        let (word, _tilde_leases) = self.tilde_assignment_value(word)?;
                        let value = self.expand_word(&word).await?;
                        if self.is_xtrace_enabled() {
                            // `+ v=x`, `+ a[1]='a b'`, `+ v+=y`
                            let prefix = self.xtrace_prefix().await;
                            let body = format!(
                                "{}={}",
                                Self::xtrace_assignment_lhs(assignment),
                                xtrace::quote_value(&value)
                            );
                            self.queue_xtrace_line(&prefix, &body);
                        }
                        let target = match self.resolve_nameref_strict(&assignment.name) {
                            Ok(t) => t,
                            Err(()) => {
                                return Err(crate::error::Error::LineAbort(self.diag(format!(
                                    "warning: {}: circular name reference\n",
                                    assignment.name
                                ))));
                            }
                        };
                        // `ref[0]=x` through `declare -n ref='a[0]'`: bash
                        // refuses the element of an element.
                        if assignment.index.is_some()
                            && target.contains('[')
                            && target != assignment.name
                        {
                            return Err(crate::error::Error::LineAbort(
                                self.diag(format!("`{target}': not a valid identifier\n")),
                            ));
                        }
                        let base = target.split('[').next().unwrap_or(&target).to_string();
                        // THREAT[TM-INJ-019]: assignments to readonly variables fail
                        // visibly, as in bash.
                        if self.is_var_readonly(&base) {
                            let msg = self.diag(format!("{base}: readonly variable\n"));
                            if has_command {
                                stderr.push_str(&msg);
                                continue;
                            }
                            // A failed bare assignment also counts for `set -e`.
                            self.assign_error_abort = true;
                            return Err(crate::error::Error::LineAbort(msg));
                        }
                        if let Some(index_str) = &assignment.index {
                            self.assign_element(&base, index_str, value, assignment.append)
                                .await?;
                        } else if has_command {
                            self.assign_raw = true;
                            if assignment.append {
                                let existing = self.expand_variable(&assignment.name);
                                self.set_variable(assignment.name.clone(), existing + &value);
                            } else {
                                self.set_variable(assignment.name.clone(), value);
                            }
                            self.assign_raw = false;
                        } else if assignment.append {
                            self.append_scalar(&assignment.name, value);
                        } else {
                            self.set_variable(assignment.name.clone(), value);
                        }
                    }
                    AssignmentValue::Array(words) => {
                        if let Some(index) = &assignment.index {
                            return Err(crate::error::Error::LineAbort(self.diag(format!(
                                "{}[{index}]: cannot assign list to array member\n",
                                assignment.name
                            ))));
                        }
                        if has_command && !assignment.append {
                            // `B=(b b) cmd`: bash binds the literal text as a
                            // temporary scalar; the array (if any) is untouched
                            // and the binding is undone after the command.
                            let text = Self::array_binding_env_text(words);
                            self.insert_variable_checked(assignment.name.clone(), text);
                            continue;
                        }
                        if self.is_xtrace_enabled() {
                            // bash traces the list as written, before
                            // expanding it: `+ a=(x 'y z' $(cmd))`.
                            let prefix = self.xtrace_prefix().await;
                            let list: Vec<String> =
                                words.iter().map(crate::parser::word_text).collect();
                            let body = format!(
                                "{}=({})",
                                Self::xtrace_assignment_lhs(assignment),
                                list.join(" ")
                            );
                            self.queue_xtrace_line(&prefix, &body);
                        }
                        // `declare -n r; r=(x y)`: a reference with no target
                        // stops being one and becomes the array.
                        if self
                            .scoped
                            .namerefs
                            .get(&assignment.name)
                            .is_some_and(String::is_empty)
                        {
                            self.namerefs_mut().remove(&assignment.name);
                            stderr.push_str(&self.diag(format!(
                                "warning: {}: removing nameref attribute\n",
                                assignment.name
                            )));
                        }
                        let arr_name = match self.resolve_nameref_strict(&assignment.name) {
                            Ok(n) => n,
                            Err(()) => {
                                return Err(crate::error::Error::LineAbort(self.diag(format!(
                                    "warning: {}: circular name reference\n",
                                    assignment.name
                                ))));
                            }
                        };
                        // THREAT[TM-INJ-019]: arrays honour readonly like scalars.
                        if self.is_var_readonly(&arr_name) {
                            return Err(crate::error::Error::LineAbort(
                                self.diag(format!("{arr_name}: readonly variable\n")),
                            ));
                        }
                        let assoc = self.scoped.assoc_arrays.contains_key(&arr_name);
                        self.assign_array_words(&arr_name, words, assignment.append, assoc)
                            .await?;
                    }
                }
            }
            // A command of assignments only leaves `$_` empty (bash).
            if !has_command && !assignments.is_empty() {
                self.insert_variable_checked("_".to_string(), String::new());
            }
            Ok(stderr)
        })
    }

    /// `name`, `name[i]` or `name+` as an xtrace assignment line shows it.
    fn xtrace_assignment_lhs(assignment: &Assignment) -> String {
        let mut lhs = assignment.name.clone();
        if let Some(index) = &assignment.index {
            lhs.push('[');
            lhs.push_str(index);
            lhs.push(']');
        }
        if assignment.append {
            lhs.push('+');
        }
        lhs
    }

    /// Where the current simple command's process substitutions start.
    fn proc_sub_mark(&self) -> ProcSubMark {
        ProcSubMark {
            deferred: self.deferred_proc_subs.len(),
            fds: self.proc_subs.open_count(),
        }
    }

    /// Discard deferred output process substitutions queued by the current
    /// simple command and close the fds it opened.
    fn discard_deferred_proc_subs_from(&mut self, start: ProcSubMark) {
        self.deferred_proc_subs.truncate(start.deferred);
        self.proc_subs.close_from(start.fds);
    }

    /// Execute deferred output process substitutions (`>(cmd)`) queued by the
    /// current simple command. Older entries belong to an outer expansion frame
    /// and must not be drained by nested command substitutions.
    async fn run_deferred_proc_subs_from(
        &mut self,
        start: ProcSubMark,
        result: &mut Result<ExecResult>,
    ) -> Result<()> {
        // The command is done: its substitution fds close (bash reuses 63).
        self.proc_subs.close_from(start.fds);
        if self.deferred_proc_subs.len() <= start.deferred {
            return Ok(());
        }
        let deferred = self.deferred_proc_subs.split_off(start.deferred);
        for (buf, commands) in deferred {
            let bytes = std::mem::take(&mut *buf.lock().unwrap_or_else(|e| e.into_inner()));
            let stdin_data: Option<crate::StreamData> = (!bytes.is_empty()).then(|| bytes.into());
            // `>(cmd)` runs in a subshell too (see expand_process_substitution).
            // Boxed: keeps this future (in every simple command's await chain)
            // small so deep `$(...)` nesting stays within the stack.
            let snapshot = Box::new(self.snapshot_subshell_state());
            let last_exit_code = self.last_exit_code;
            self.bash_subshell += 1;
            self.enter_subshell_pid();
            self.xtrace_depth += 1;
            self.enter_nofork_scope(&commands, true, 0);
            let mut run = Ok(());
            for cmd in &commands {
                let prev_stdin = self.pipeline_stdin.take();
                self.pipeline_stdin = stdin_data.clone();
                let cmd_result = self.execute_command(cmd).await;
                self.pipeline_stdin = prev_stdin;
                let cmd_result = match cmd_result {
                    Ok(r) => r,
                    Err(e) => {
                        run = Err(e);
                        break;
                    }
                };
                if let Ok(r) = result {
                    r.stdout.append(&cmd_result.stdout);
                    r.stderr.append(&cmd_result.stderr);
                }
                if matches!(
                    cmd_result.control_flow,
                    ControlFlow::Exit(_) | ControlFlow::Abort
                ) {
                    break;
                }
            }
            self.restore_subshell_state(*snapshot);
            self.leave_nofork_scope();
            self.last_exit_code = last_exit_code;
            run?;
        }
        Ok(())
    }

    /// Restore saved variable values (used for prefix assignment cleanup).
    fn restore_variables(&mut self, saves: Vec<(String, Option<String>)>) {
        for (name, old) in saves {
            match old {
                Some(v) => {
                    self.insert_variable_checked(name, v);
                }
                None => {
                    self.vars_mut().remove(&name);
                }
            }
        }
        self.temp_path = false;
    }

    /// `set -x` line prefix: PS4 expanded like bash's prompt strings
    /// (double-quote rules, tracing off, `$?` kept), its first character
    /// repeated once per nesting level. Boxed: callers include
    /// `execute_simple_command`, whose frame must stay small (TM-DOS-089).
    fn xtrace_prefix<'a>(
        &'a mut self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + Send + 'a>> {
        Box::pin(async move {
            // PS4 is seeded at startup; `unset PS4` means no prefix (bash).
            let ps4 = self
                .scoped
                .variables
                .get("PS4")
                .cloned()
                .unwrap_or_default();
            let expanded = if ps4.contains(['$', '`']) {
                let word = Parser::parse_word_string_with_limits(
                    &ps4,
                    self.limits.max_ast_depth,
                    self.limits.max_parser_operations,
                );
                let saved_exit = self.last_exit_code;
                let saved_nounset = self.nounset_error.take();
                let traced = self.flags.contains(BashFlags::XTRACE);
                self.flags.remove(BashFlags::XTRACE);
                let expanded = self.expand_word(&word).await;
                self.flags.set(BashFlags::XTRACE, traced);
                self.nounset_error = saved_nounset;
                self.last_exit_code = saved_exit;
                expanded.unwrap_or(ps4)
            } else {
                ps4
            };
            xtrace::prefix(&expanded, self.xtrace_depth + 1)
        })
    }

    /// Queue one `set -x` line with the pending `$(...)` stderr, so it is
    /// written after the substitutions that built it and before the
    /// command's own redirections apply.
    fn queue_xtrace_line(&mut self, prefix: &str, body: &str) {
        let line = format!("{prefix}{body}\n");
        self.queue_subst_stderr(&line.into());
    }

    /// Trace a simple command's expanded words (`+ echo 'a b'`). Boxed for
    /// `execute_simple_command`'s frame (TM-DOS-089).
    fn trace_simple_command<'a>(
        &'a mut self,
        name: &'a str,
        args: &'a [String],
        redirected: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let prefix = self.xtrace_prefix().await;
            let mut body = String::from(xtrace::quote_word(name));
            let mut after = Vec::new();
            for arg in args {
                body.push(' ');
                // `declare -a a=(1 2)` operand placeholder: bash traces the
                // array assignment first (`+ a=('1' '2')`), then the
                // declaration as `declare -a a`.
                if arg.contains(declare::COMPOUND_MARK) {
                    let lhs = arg.split(declare::COMPOUND_MARK).next().unwrap_or(arg);
                    let name = lhs.trim_end_matches('=').trim_end_matches('+');
                    let idx: Option<usize> = arg
                        .split(declare::COMPOUND_MARK)
                        .nth(1)
                        .and_then(|i| i.parse().ok());
                    if let Some(elems) = idx.and_then(|i| self.pending_compound_args.get(i)) {
                        let shown: Vec<String> = elems
                            .iter()
                            .map(|w| {
                                let text = crate::parser::word_text(w);
                                if w.parts.iter().all(|p| matches!(p, WordPart::Literal(_))) {
                                    format!("'{}'", text.replace('\'', "'\\''"))
                                } else {
                                    text
                                }
                            })
                            .collect();
                        self.queue_xtrace_line(&prefix, &format!("{lhs}({})", shown.join(" ")));
                    }
                    body.push_str(name);
                } else {
                    body.push_str(&xtrace::quote_word(arg));
                    // `readonly x=3` / `export x=3`: bash then traces the
                    // assignment itself.
                    if matches!(name, "readonly" | "export")
                        && let Some((lhs, value)) = arg.split_once('=')
                        && Self::is_assignment_prefix(&format!("{lhs}="))
                    {
                        after.push(format!("{lhs}={}", xtrace::quote_value(value)));
                    }
                }
            }
            self.queue_xtrace_line(&prefix, &body);
            for line in after {
                self.queue_xtrace_line(&prefix, &line);
            }
            // A function body, `eval` and `source` stream their own output as
            // they run, which makes the enclosing list skip streaming this
            // command's result: write the queued lines now (they stay queued
            // for the returned result). Not when the command's own output
            // redirects hold that streaming back (`f 2>&1`).
            if !redirected
                && (matches!(name, "eval" | "source" | ".")
                    || self.scoped.functions.contains_key(name))
            {
                let pending = self.subst_stderr.clone();
                let before = self.output_emit_count;
                self.maybe_emit_output(&crate::StreamData::new(), &pending, before)
                    .await
                    .ok();
            }
        })
    }

    // THREAT[TM-DOS-089]: Box the full simple-command path because nested
    // `echo $(echo $(...))` repeatedly polls this helper, and its large async
    // state (name/arg expansion, alias/env handling, xtrace, redirects) was
    // still enough to overflow smaller Linux/tarpaulin stacks.
    fn execute_simple_command<'a>(
        &'a mut self,
        command: &'a SimpleCommand,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        // DEBUG runs before the command (bash), its output ahead of the
        // command's own. Without a handler the body's own future is
        // returned: no extra poll frame per command (stack depth).
        let Some(trap_cmd) = self.debug_trap_pending() else {
            return self.execute_simple_command_body(command, stdin);
        };
        Box::pin(async move {
            let debug = self.run_debug_trap(trap_cmd).await;
            if let Some(code) = debug.exit {
                return Ok(debug.into_exit_result(code));
            }
            let result = self.execute_simple_command_body(command, stdin).await;
            Ok(debug.prepend_to(result?))
        })
    }

    fn execute_simple_command_body<'a>(
        &'a mut self,
        command: &'a SimpleCommand,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // `set -k`: assignment words anywhere in the command go to its
            // environment, not its arguments.
            // Boxed: a `SimpleCommand` held here made this future, boxed for
            // every command, too large for the allocator's per-thread cache
            // (clix patch, "a command's fixed costs").
            let hoisted: Box<SimpleCommand>;
            let command = if self.flags.contains(BashFlags::KEYWORD)
                && command.args.iter().any(|w| keyword_assignment(w).is_some())
            {
                hoisted = Box::new(hoist_keyword_assignments(command));
                &*hoisted
            } else {
                command
            };
            let deferred_proc_sub_start = self.proc_sub_mark();

            // The command word undergoes the same field splitting as args:
            // `"$@"`, `$cmd`, `$(...)` may yield several words (first is the
            // name, rest are prepended args) or none at all (no command).
            // Pure literals skip the field path (hot path, no splitting).
            let start_subst_gen = self.subst_generation;
            let name_is_literal = command
                .name
                .parts
                .iter()
                .all(|p| matches!(p, WordPart::Literal(_)));
            let (mut name, mut name_extra_args, name_vanished) = if name_is_literal {
                match self.expand_word(&command.name).await {
                    Ok(name) => (name, Vec::new(), false),
                    Err(err) => {
                        self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                        return Err(err);
                    }
                }
            } else {
                match self.expand_word_to_fields(&command.name).await {
                    Ok(fields) => {
                        let mut fields = fields.into_iter();
                        match fields.next() {
                            Some(first) => (first, fields.collect::<Vec<_>>(), false),
                            None => (String::new(), Vec::new(), true),
                        }
                    }
                    Err(err) => {
                        self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                        return Err(err);
                    }
                }
            };

            if let Some(err_msg) = self.nounset_error.take() {
                self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                return Ok(self.expansion_error_result(err_msg));
            }

            // `$empty cmd args`: the name word expanded to no fields, so
            // the first argument word that yields a field is the command.
            let mut args_consumed = false;
            if name_vanished && !command.args.is_empty() {
                match self.vanished_name_args(command).await {
                    Ok(Some((first, rest))) => {
                        name = first;
                        name_extra_args = rest;
                        args_consumed = true;
                    }
                    Ok(None) => {}
                    Err(err) => {
                        self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                        return Err(err);
                    }
                }
            }

            let pre_expanded_args = if args_consumed {
                Some(std::mem::take(&mut name_extra_args))
            } else if !name.is_empty() {
                let decl = Self::is_decl_keyword(&name, command);
                match self.expand_command_args(command, decl).await {
                    Ok(args) if name_extra_args.is_empty() => Some(args),
                    Ok(args) => {
                        let mut all = name_extra_args;
                        all.extend(args);
                        Some(all)
                    }
                    Err(err) => {
                        self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                        return Err(err);
                    }
                }
            } else {
                None
            };

            if let Some(err) = self.pending_arith_abort().or_else(|| self.pending_expansion_cap()) {
                self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                return Err(err);
            }

            let mut var_saves: Vec<(String, Option<String>)> = command
                .assignments
                .iter()
                .map(|a| (a.name.clone(), self.scoped.variables.get(&a.name).cloned()))
                .collect();

            let pre_assign_subst_gen = self.subst_generation;

            // Environment before the prefix assignments, so `V=1 cmd` on an
            // exported `V` restores the old value afterwards.
            let pre_assign_env: HashMap<String, Option<String>> = if name.is_empty() {
                HashMap::new()
            } else {
                command
                    .assignments
                    .iter()
                    .map(|a| (a.name.clone(), self.env.get(&a.name).cloned()))
                    .collect()
            };
            let assign_stderr = match self
                .process_command_assignments(&command.assignments, !name.is_empty())
                .await
            {
                Ok(stderr) => stderr,
                Err(err) => {
                    self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                    return Err(err);
                }
            };
            if let Some(err) = self.pending_arith_abort().or_else(|| self.pending_expansion_cap()) {
                self.restore_variables(var_saves);
                self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                return Err(err);
            }

            // Aliases expand when the command is parsed (see `ParseOptions`).

            // Empty command handling
            if name.is_empty() {
                // `X=${x?msg}` alone: fatal here, not at the next command
                // (which, after `(X=${x?msg})`, would be the parent's).
                if let Some(err_msg) = self.nounset_error.take() {
                    self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                    return Ok(self.expansion_error_result(err_msg));
                }
                // `"" 2>/dev/null`: the not-found report follows the redirects.
                let not_found =
                    command.name.quoted && !name_vanished && command.assignments.is_empty();
                let exit_code = if not_found {
                    127
                } else if !command.assignments.is_empty()
                    && self.subst_generation == pre_assign_subst_gen
                {
                    0
                } else if command.assignments.is_empty() && !command.redirects.is_empty() {
                    // Redirect-only null command (`> file`, `< file`).
                    0
                } else if self.subst_generation == start_subst_gen {
                    // Name expanded to nothing (`"$@"` with no params, empty
                    // `$x`) and no command substitution ran: status 0.
                    0
                } else {
                    self.last_exit_code
                };
                self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                if not_found || !command.redirects.is_empty() {
                    // Null commands still perform their redirections: `> f`
                    // truncates, `< missing` fails with status 1.
                    let own_error =
                        not_found.then(|| ExecResult::err(self.diag(": command not found\n"), 127));
                    return self
                        .null_command_outcome(own_error, exit_code, &command.redirects)
                        .await;
                }
                self.last_exit_code = exit_code;
                return Ok(ExecResult {
                    stdout: crate::StreamData::new(),
                    stderr: crate::StreamData::new(),
                    exit_code,
                    control_flow: crate::interpreter::ControlFlow::None,
                    ..Default::default()
                });
            }

            // Inject prefix assignments into env for command duration.
            // Save original env value once per name so duplicate assignments
            // (e.g., `A=1 A=2 cmd`) restore to pre-command state.
            let mut env_saves: HashMap<String, Option<String>> = HashMap::new();
            for assignment in &command.assignments {
                if assignment.index.is_none()
                    && let Some(value) = self.scoped.variables.get(&assignment.name).cloned()
                {
                    env_saves.entry(assignment.name.clone()).or_insert_with(|| {
                        pre_assign_env
                            .get(&assignment.name)
                            .cloned()
                            .unwrap_or(None)
                    });
                    self.env_mut().insert(assignment.name.clone(), value);
                }
            }

            let args = pre_expanded_args.unwrap_or_default();

            // Check for glob error sentinel
            if let Some(first) = args.first()
                && first.starts_with("\x00ERR\x00")
            {
                let err_msg = first.trim_start_matches("\x00ERR\x00").to_string();
                self.last_exit_code = 1;
                self.restore_variables(var_saves);
                self.discard_deferred_proc_subs_from(deferred_proc_sub_start);
                let result = ExecResult::err(err_msg, 1);
                // failglob abandons the rest of the line (bash DISCARD):
                // `echo *.ZZ; echo next` prints nothing more.
                let mut result = self.apply_redirections(result, &command.redirects).await?;
                // Under `set -e` the failed command ends the shell.
                result.control_flow = if self.errexit_active() {
                    ControlFlow::Exit(1)
                } else {
                    ControlFlow::Abort
                };
                return Ok(result);
            }

            if self.is_xtrace_enabled() {
                let redirected = Self::has_output_redirect(&command.redirects);
                self.trace_simple_command(&name, &args, redirected).await;
            }

            self.nofork_now = self.nofork_eligible(command);
            if !var_saves.is_empty() {
                self.arm_tempenv(&name, &var_saves);
            }
            let result = self
                .execute_dispatched_command(&name, args, command, stdin)
                .await;
            self.pending_tempenv = None;

            if !var_saves.is_empty() {
                self.keep_posix_prefix(&name, &mut env_saves, &mut var_saves);
            }
            // Restore env
            for (name, old) in env_saves {
                match old {
                    Some(v) => {
                        self.env_mut().insert(name, v);
                    }
                    None => {
                        self.env_mut().remove(&name);
                    }
                }
            }

            // Restore variables
            self.restore_variables(var_saves);

            let result = if assign_stderr.is_empty() {
                result
            } else {
                result.map(|mut r| {
                    let mut stderr: crate::StreamData = assign_stderr.into();
                    stderr.append(&r.stderr);
                    r.stderr = stderr;
                    r
                })
            };

            let mut result = result;

            self.run_deferred_proc_subs_from(deferred_proc_sub_start, &mut result)
                .await?;

            result
        })
    }

    /// Expand command arguments with field splitting, brace, and glob expansion.
    /// Boxed because nested command substitution repeatedly expands `echo` args,
    /// and the combined field/glob state still materially contributes to per-level
    /// poll-stack growth on smaller Linux/tarpaulin stacks.
    fn expand_command_args<'a>(
        &'a mut self,
        command: &'a SimpleCommand,
        decl: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<String>>> + Send + 'a>> {
        Box::pin(async move {
            let mut args: Vec<String> = Vec::new();
            let mut compounds: Vec<Vec<Word>> = Vec::new();
            for word0 in &command.args {
                // `name=(...)` operand of a declaration builtin: the builtin
                // expands the elements; pass a placeholder naming them.
                if let [
                    WordPart::CompoundAssignment {
                        name,
                        append,
                        elements,
                    },
                ] = word0.parts.as_slice()
                {
                    if decl {
                        let op = if *append { "+=" } else { "=" };
                        args.push(format!(
                            "{name}{op}{m}{}{m}",
                            compounds.len(),
                            m = declare::COMPOUND_MARK
                        ));
                        compounds.push(elements.clone());
                    } else {
                        args.push(word0.to_string());
                    }
                    continue;
                }
                // Brace expansion runs first, on the unexpanded word.
                let braced = self.brace_expand_word(word0);
                for word in braced.as_deref().unwrap_or(std::slice::from_ref(word0)) {
                    // Use field expansion so "${arr[@]}" produces multiple args
                    self.decl_operand_fields = decl;
                    let fields = self.expand_word_to_fields(word).await?;

                    // Skip brace and glob expansion for quoted words — unless the
                    // word has unquoted glob chars (e.g. `"$var"*.ext`) in which case
                    // the quoted expansion suppresses IFS splitting but the unquoted
                    // portion must still undergo glob expansion.
                    if word.quoted && !word.has_unquoted_glob {
                        args.extend(fields);
                        continue;
                    }

                    // `export v=*`: an assignment operand is not globbed.
                    if decl && Self::is_decl_assignment_word(word) {
                        args.extend(fields);
                        continue;
                    }

                    // For each field, apply glob expansion
                    for expanded in fields {
                        if let Err(pat) = self
                            .expand_glob_field_into(
                                expanded,
                                word.quoted && word.has_unquoted_glob,
                                &mut args,
                            )
                            .await
                        {
                            self.last_exit_code = 1;
                            return Ok(vec![format!(
                                "\x00ERR\x00{}no match: {}\n",
                                self.diag_prefix(),
                                pat
                            )]);
                        }
                    }
                }
            }
            self.pending_compound_args = compounds;
            Ok(args)
        })
    }

    /// `execute_dispatched_command` for a command whose redirects need
    /// resolving first: targets that may split (one word or an ambiguous
    /// redirect) and `N<<E` here-doc fds opened for the command only.
    fn execute_dispatched_with_redirect_prep<'a>(
        &'a mut self,
        name: &'a str,
        args: Vec<String>,
        command: &'a SimpleCommand,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // `> $f` / `> out-*`: one word or an ambiguous redirect.
            match self
                .resolve_split_redirect_targets(&command.redirects)
                .await?
            {
                Ok(None) => {}
                Ok(Some(redirects)) => {
                    let command = SimpleCommand {
                        redirects,
                        ..command.clone()
                    };
                    return self
                        .execute_dispatched_command(name, args, &command, stdin)
                        .await;
                }
                Err(failed) => {
                    self.last_exit_code = failed.exit_code;
                    return Ok(failed);
                }
            }
            // `cmd 3<<E`: fd 3 reads the here-doc for this command only
            // (`exec 3<<E` keeps it, through its own path).
            if name != "exec"
                && let Some((scope, redirects)) = self.open_here_fds(&command.redirects).await?
            {
                let command = SimpleCommand {
                    redirects,
                    ..command.clone()
                };
                let result = self
                    .execute_dispatched_command(name, args, &command, stdin)
                    .await;
                self.close_here_fds(scope);
                return result;
            }
            self.execute_dispatched_command(name, args, command, stdin)
                .await
        })
    }

    /// Execute a command after name resolution and prefix assignment setup.
    ///
    /// Handles stdin processing and dispatch to functions, special builtins,
    /// regular builtins, or command-not-found. Args are pre-expanded.
    // THREAT[TM-DOS-089]: Box the dispatch wrapper too so per-level stdin
    // plumbing, trace bookkeeping, and dispatch future selection stay off the
    // recursive poll stack during nested command substitution.
    fn execute_dispatched_command<'a>(
        &'a mut self,
        name: &'a str,
        args: Vec<String>,
        command: &'a SimpleCommand,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // Split targets and per-command here-doc fds: rare, so the work
            // sits in its own boxed future, off this hot frame (TM-DOS-089).
            if redirection::needs_redirect_prep(name, &command.redirects) {
                return self
                    .execute_dispatched_with_redirect_prep(name, args, command, stdin)
                    .await;
            }
            // `cmd {fd}>file`: bash never undoes a `{var}` redirection, so it
            // opens a descriptor in the shell like `exec` would. `exec`
            // itself applies its redirects in order.
            if name != "exec" && command.redirects.iter().any(|r| r.fd_var.is_some()) {
                let remaining = match self.apply_named_fd_redirects(&command.redirects).await? {
                    Ok(remaining) => remaining,
                    Err(err) => return Ok(err),
                };
                let command = SimpleCommand {
                    redirects: remaining,
                    ..command.clone()
                };
                return self
                    .execute_dispatched_command(name, args, &command, stdin)
                    .await;
            }
            // Fds this command's redirects open stay valid inside it
            // (`f 3>&1` where `f` writes `>&3`).
            let scope_len = self.fd_redirect_scope.len();
            redirection::push_redirect_scope_fds(&mut self.fd_redirect_scope, &command.redirects);
            // Stderr of this command's own `$(...)` words: claimed here so a
            // function body cannot route it through the call's redirects.
            let held = self.hold_subst_stderr();
            // clix patch ("--help for every command"): `NAME --help` alone
            // is answered by the host, before NAME runs (`exit --help` must
            // not exit), for the commands it knows; a function of that name
            // keeps the word as its own.
            if args.len() == 1
                && args[0] == "--help"
                && !self.scoped.functions.contains_key(name)
                && let Some(help) = self.flag_help.clone()
                && let Some(text) = help(name.to_string()).await
            {
                self.fd_redirect_scope.truncate(scope_len);
                self.last_exit_code = 0;
                let mut result = self.redirect_result(ExecResult::ok(text), &command.redirects).await;
                self.settle_held_subst_stderr(held, &mut result);
                return result;
            }
            let mut result = self
                .execute_dispatched_command_inner(name, args, command, stdin)
                .await;
            self.fd_redirect_scope.truncate(scope_len);
            self.settle_held_subst_stderr(held, &mut result);
            result
        })
    }

    fn execute_dispatched_command_inner<'a>(
        &'a mut self,
        name: &'a str,
        args: Vec<String>,
        command: &'a SimpleCommand,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            let streaming_host = self.is_streaming_host_command(name);
            let can_stream = !self.scoped.functions.contains_key(name);
            self.builtin_stdout_pipe = if can_stream
                && (self.stream_stdout_command == Some(command as *const SimpleCommand as usize)
                    || (self.output_callback.is_some()
                        && (streaming_host || Self::streams_stdout(command))))
            {
                // The request's output is looked up (a lock and two Arc
                // clones) only for a command that streams (clix patch, "a
                // command's fixed costs").
                self.pipe_out.clone().or_else(|| {
                    self.execution_output()
                        .filter(|_| self.output_callback.is_some())
                        .map(|o| o.stdout.clone())
                })
            } else {
                None
            };
            let explicit_input = command.redirects.iter().any(|r| {
                r.fd.unwrap_or(0) == 0
                    && matches!(
                        r.kind,
                        RedirectKind::Input
                            | RedirectKind::HereDoc
                            | RedirectKind::HereDocStrip
                            | RedirectKind::HereString
                            | RedirectKind::DupInput
                            | RedirectKind::ReadWrite
                    )
            });
            self.builtin_stdin_pipe =
                if !explicit_input && (streaming_host || Self::streams_stdin(name)) {
                    self.pipe_in.take()
                } else {
                    None
                };
            // Track $_ (last argument of previous command, from already-expanded args)
            if let Some(last) = args.last() {
                // `declare a=(1 2)`: the operand placeholder stands for `a`.
                let last = if last.contains(declare::COMPOUND_MARK) {
                    let name = last.split('=').next().unwrap_or(last);
                    name.trim_end_matches('+')
                } else {
                    last.as_str()
                };
                self.set_last_argument(last);
            } else {
                self.set_last_argument(name);
            }

            // `return` outside a function or a sourced script is a usage
            // error in bash: it reports, exits 2 and the script carries on.
            // `keeps_arg0` marks a function's frame; a frame that only carries
            // top-level positional parameters (`bashkit script.sh a b`) does
            // not make `return` legal.
            let in_function = self.call_stack.iter().any(|f| f.keeps_arg0);
            // Its own redirects apply to the report (`return 2>&1`).
            if name == "return" && !in_function && self.source_depth == 0 && !self.in_trap {
                self.last_exit_code = 2;
                let result = ExecResult::err(
                    self.diag("return: can only `return' from a function or sourced script\n"),
                    2,
                );
                return self.redirect_result(result, &command.redirects).await;
            }

            // Check for nounset error from argument expansion
            if let Some(err_msg) = self.nounset_error.take() {
                return Ok(self.expansion_error_result(err_msg));
            }

            if let Some(stderr) = self.disabled_redirect_error(&command.redirects) {
                return Ok(ExecResult::err(stderr, 1));
            }

            // Handle input redirections first
            let stdin_setup = match self
                .process_input_redirections(
                    stdin,
                    &command.redirects,
                    stdin_demand(name, &args),
                    simple_high_fd_stdin(name, &args),
                )
                .await
            {
                Ok(s) => s,
                Err(crate::error::Error::CommandFailure(msg)) => {
                    return Ok(ExecResult::err(msg, 1));
                }
                Err(e) => return Err(e),
            };
            // Keep the materialized stdin's byte/text storage admitted
            // for as long as the command retains it.
            let _stdin_storage = stdin_setup.stdin_lease;
            let stdin = stdin_setup.stdin;

            // `read -u FD` on a readable fd (`exec 3<f`, a coproc): its
            // next line is stdin.
            let stdin = match (name == "read" && stdin.is_none())
                .then(|| self.read_u_source(&args))
                .flatten()
            {
                Some(coproc::ReadSource::Ready(line)) => Some(line.into()),
                Some(coproc::ReadSource::Pipe(pipe)) => {
                    Some(Box::pin(coproc::read_coproc_input(pipe, stdin_demand(name, &args))).await)
                }
                None => stdin,
            };

            if stdin.is_none() && self.pipe_in.is_some() {
                Box::pin(self.fill_stdin_from_pipe(name, &args)).await;
            }

            // If no explicit stdin, inherit from pipeline_stdin (for compound cmds in pipes).
            // For `read`, consume one line; for other commands, provide all remaining data.
            let stdin = if stdin.is_some() {
                stdin
            } else if let Some(ps) = self.pipeline_stdin.as_mut() {
                // An empty pipe is still stdin at EOF: `printf '' | { wc -l; }`
                // prints 0, not nothing.
                {
                    if name == "read" {
                        // Consume one record (line, `-d` delimiter, `-n` count,
                        // `\<newline>` continuation) from pipeline stdin, in
                        // place (clix patch: no copy of the rest per line).
                        let used = builtins::read_consumed_len(ps.as_bytes(), &args);
                        let record = crate::StreamData::from(&ps.as_bytes()[..used]);
                        ps.advance(used);
                        Some(record)
                    } else {
                        Some(ps.clone())
                    }
                }
            } else {
                None
            };

            // TRACE: Record command start event
            let trace_start = if self.trace.mode() != crate::trace::TraceMode::Off {
                self.trace
                    .command_start(name, &args, self.cwd.to_string_lossy().as_ref());
                Some(crate::time_compat::Instant::now())
            } else {
                None
            };

            let result = self.dispatch_command(name, command, args, stdin).await;

            // TRACE: Record command exit event for all dispatch paths
            if let (Some(start), Ok(r)) = (trace_start, &result) {
                self.trace.command_exit(name, r.exit_code, start.elapsed());
            }

            result
        })
    }

    /// Inner dispatch logic for command execution.
    /// Separated from `execute_dispatched_command` so trace start/exit events
    /// wrap all return paths uniformly.
    /// Handle `exec` builtin: apply redirections to current shell context.
    async fn execute_exec_builtin(
        &mut self,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // Whatever the enclosing sequence has written so far belongs to the
        // caller; only what follows this `exec` goes to its target.
        self.exec_install_mark = self.sequence_accum;
        // Options: `-c` (empty env) and `-l` (login) change nothing here;
        // `-a NAME` names argv[0]; `--` ends them.
        let mut args = args;
        let mut argv0: Option<String> = None;
        while let Some(first) = args.first() {
            match first.as_str() {
                "--" => {
                    args = &args[1..];
                    break;
                }
                "-c" | "-l" | "-cl" | "-lc" => args = &args[1..],
                "-a" if args.len() > 1 => {
                    argv0 = Some(args[1].clone());
                    args = &args[2..];
                }
                _ => break,
            }
        }
        if !args.is_empty() {
            // Security: never reconstruct shell source from argv.
            // Execute argv directly to avoid quote/parse injection.
            let target_name = args[0].clone();
            let mut target_args = args[1..].to_vec();
            // A shell's argv[0] is its `$0`: `exec -a N sh -c 'echo $0'`.
            if let Some(name) = argv0
                && matches!(target_name.as_str(), "sh" | "bash")
                && target_args.len() == 2
                && target_args[0] == "-c"
            {
                target_args.push(name);
            }
            let target_command = SimpleCommand {
                name: Word::literal(target_name.clone()),
                args: target_args.iter().cloned().map(Word::literal).collect(),
                redirects: redirects.to_vec(),
                assignments: Vec::new(),
                span: Span::new(),
            };
            // bash's `exec` lowers `$SHLVL` first, except directly in `( )`.
            self.nofork_now = self.nofork.subshell_env & SUBSHELL_PAREN == 0;
            let result = self
                .execute_dispatched_command(&target_name, target_args, &target_command, None)
                .await?;

            // Signal exit so subsequent statements don't execute
            return Ok(ExecResult {
                control_flow: ControlFlow::Return(result.exit_code),
                ..result
            });
        }
        for redirect in redirects {
            if let Some(err) = self.apply_persistent_redirect(redirect).await? {
                return Ok(err);
            }
        }
        // fd 1/2 pointed back at the original streams (`exec 1>&3`) is no
        // redirect at all.
        if matches!(self.exec_fd_table.get(&1), Some(FdTarget::Stdout)) {
            self.exec_fd_table.remove(&1);
        }
        if matches!(self.exec_fd_table.get(&2), Some(FdTarget::Stderr)) {
            self.exec_fd_table.remove(&2);
        }
        // Every redirect was applied to the shell above (and validated
        // there): re-applying them to `exec`'s empty output would check
        // `1>&3` against the state after `3>&-`.
        Ok(ExecResult::default())
    }

    /// Target for `exec N>&M` / `exec N>/dev/fd/M`.
    /// Send a top-level command's output where `exec` pointed fd 1 and 2
    /// (`exec >log 2>&1`). Output a sub-call already streamed to the caller
    /// (before the `exec` ran) stays; the rest goes to the target.
    // WTF: routing happens per top-level command (per element of a
    // top-level `;`/`&&` list), not per write: output written earlier in the
    // same compound command (`{ echo a; exec >log; }`) before `exec >log`
    // ran, and not streamed, also goes to the log.
    async fn route_exec_output(
        &mut self,
        result: &mut ExecResult,
        emitted_before: (usize, usize),
        keep_floor: (usize, usize),
        command_name: Option<&str>,
    ) -> Result<()> {
        if !self.exec_fd_table.contains_key(&1) && !self.exec_fd_table.contains_key(&2) {
            return Ok(());
        }
        // Bytes to leave with the caller: what a streaming caller already saw,
        // or what was written before the `exec` installed its target.
        let streamed_out = (self.output_stream_stdout_bytes - emitted_before.0).max(keep_floor.0);
        let streamed_err = (self.output_stream_stderr_bytes - emitted_before.1).max(keep_floor.1);
        let take = |data: &mut crate::StreamData, keep: usize| {
            let keep = keep.min(data.len());
            let rest = crate::StreamData::from(&data.as_bytes()[keep..]);
            *data = data.prefix(keep);
            rest
        };
        let mut moved = Vec::new();
        if let Some(target) = self.exec_fd_table.get(&1).cloned() {
            moved.push((take(&mut result.stdout, streamed_out), target));
        }
        if let Some(target) = self.exec_fd_table.get(&2).cloned() {
            moved.push((take(&mut result.stderr, streamed_err), target));
        }
        let mut write_failed = false;
        for (data, target) in moved {
            if data.is_empty() {
                continue;
            }
            match target {
                FdTarget::Stdout => result.stdout.append(&data),
                FdTarget::Stderr => result.stderr.append(&data),
                FdTarget::DevNull => {}
                FdTarget::Closed => write_failed = true,
                FdTarget::WriteFile(path, _) | FdTarget::AppendFile(path, _) => {
                    self.fs.append_file(&path, data.as_bytes()).await?;
                }
                FdTarget::Coproc(ref w) => {
                    w.write(data.as_bytes());
                    coproc::coproc_backpressure(w).await;
                }
            }
        }
        if write_failed {
            // bash: the write fails and the command reports it, naming itself.
            let who = command_name.unwrap_or(&self.last_command_name);
            let who = if who.is_empty() {
                String::new()
            } else {
                format!("{who}: ")
            };
            let msg = self.diag(format!("{who}write error: Bad file descriptor\n"));
            if !matches!(self.exec_fd_table.get(&2), Some(FdTarget::Closed)) {
                result
                    .stderr
                    .append(&crate::StreamData::from(msg.as_bytes()));
            }
            result.exit_code = 1;
            self.last_exit_code = 1;
        }
        Ok(())
    }

    /// Hand output written to a saved original stdout/stderr (`>&3` after
    /// `exec 3>&1 >log`) to the caller, unrouted.
    async fn flush_exec_passthrough(&mut self, result: &mut ExecResult) -> Result<()> {
        let (out, err) = std::mem::take(&mut self.exec_passthrough);
        if out.is_empty() && err.is_empty() {
            return Ok(());
        }
        // Saved original descriptors bypass persistent redirects, but must
        // still use the request's awaited, capped byte-output pumps.
        if self.output_callback.is_some()
            && let Some(output) = self.execution_output().filter(|_| self.pipe_out.is_none())
        {
            self.execution_budget
                .run(output.stdout.write_bounded(out.as_bytes()))
                .await??;
            self.execution_budget
                .run(output.stderr.write_bounded(err.as_bytes()))
                .await??;
        }
        if let Some(cb) = self.output_callback.as_mut() {
            cb(&out, &err);
            self.output_emit_count += 1;
            self.output_stream_stdout_bytes += out.len();
            self.output_stream_stderr_bytes += err.len();
        }
        result.stdout.append(&out);
        result.stderr.append(&err);
        Ok(())
    }

    fn exec_fd_alias_target(&self, target_fd: i32) -> FdTarget {
        // `exec 3>&1` copies where fd 1 points now (a file after `exec >log`).
        if let Some(target) = self.exec_fd_table.get(&target_fd)
            && matches!(target_fd, 1 | 2)
        {
            target.clone()
        } else if target_fd == 1 {
            FdTarget::Stdout
        } else if target_fd == 2 {
            FdTarget::Stderr
        } else {
            self.exec_fd_table
                .get(&target_fd)
                .cloned()
                .unwrap_or(FdTarget::Stdout)
        }
    }

    /// Persistent descriptors open in this shell (TM-DOS-063).
    fn persistent_fd_count(&self) -> usize {
        let mut open_fds: HashSet<i32> = self.exec_fd_table.keys().copied().collect();
        open_fds.extend(self.coproc_buffers.keys().copied());
        open_fds.extend(self.exec_input_fds.iter().copied());
        open_fds.len()
    }

    fn ensure_persistent_fd_capacity(&self, fd: i32) -> Result<()> {
        if fd < 0 {
            return Err(crate::error::Error::Execution(format!(
                "invalid file descriptor: {}",
                fd
            )));
        }

        if (0..=2).contains(&fd)
            || self.exec_fd_table.contains_key(&fd)
            || self.coproc_buffers.contains_key(&fd)
            || self.exec_input_fds.contains(&fd)
        {
            return Ok(());
        }

        if self.persistent_fd_count() >= self.limits.max_file_descriptors {
            return Err(crate::limits::LimitExceeded::MaxFileDescriptors(
                self.limits.max_file_descriptors,
            )
            .into());
        }

        Ok(())
    }

    /// Execute a registered (non-special) builtin with panic safety.
    /// The builtin must exist in `self.builtins` (caller checks with `contains_key`).
    ///
    /// Keep this helper boxed: the builtin path now carries execution-extension
    /// plumbing plus panic-catching state, and nested command substitution hits it
    /// on every `echo $(...)` level. Boxing keeps that larger state machine off the
    /// recursive poll stack so the stack-overflow regression stays fixed.
    fn execute_registered_builtin<'a>(
        &'a mut self,
        name: &'a str,
        args: &'a [String],
        stdin: Option<&'a crate::StreamData>,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        // Clone the Arc out of the map so the call doesn't hold a borrow on
        // self.builtins while we take &mut self for the execution body.
        let builtin = self.builtins.get(name).unwrap().clone();
        if let Err(error) = self.hash_builtin_use(name) {
            return Box::pin(async move { Err(error) });
        }
        self.execute_builtin_arc(
            name,
            builtin,
            crate::builtins::BuiltinAccess::Scoped,
            args,
            stdin,
            redirects,
        )
    }

    /// A registered builtin that real bash runs from `PATH` (`whoami`, `ls`)
    /// is hashed as bash hashes the program; its file is looked up only when
    /// `hash`/`type` shows it. Shell builtins never are; `set +h` stops it.
    fn hash_builtin_use(&mut self, name: &str) -> Result<()> {
        if self.temp_path
            || builtins::BASH_BUILTIN_NAMES.contains(&name)
            || ENV_SHELL_ONLY_BUILTINS.contains(&name)
            || self
                .scoped
                .variables
                .get("SHOPT_h")
                .is_some_and(|v| v == "0")
        {
            return Ok(());
        }
        Arc::make_mut(&mut self.scoped.command_hash).hit(name, None, &self.execution_budget)
    }

    /// The operands after `-v` in a `test`/`[` call that name set variables
    /// (see `ShellRef::set_vars`).
    /// Kept in `test_set_vars` (not a local) so the hot builtin frame does
    /// not grow (TM-DOS-089).
    fn test_v_probe(&mut self, name: &str, args: &[String]) {
        if !matches!(name, "test" | "[") {
            self.test_set_vars.clear();
            return;
        }
        let set: Vec<String> = args
            .windows(2)
            .filter(|w| w[0] == "-v" && self.cond_var_is_set(&w[1]))
            .map(|w| w[1].clone())
            .collect();
        self.test_set_vars = set;
    }

    /// Execute a builtin resolved via the host-owned [`BuiltinRegistry`].
    fn execute_host_builtin<'a>(
        &'a mut self,
        name: &'a str,
        builtin: crate::builtins::RegisteredBuiltin,
        args: &'a [String],
        stdin: Option<&'a crate::StreamData>,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        self.execute_builtin_arc(
            name,
            builtin.builtin,
            builtin.access,
            args,
            stdin,
            redirects,
        )
    }

    fn builtin_file_system(
        &self,
        access: crate::builtins::BuiltinAccess,
        extensions: &builtins::ExecutionExtensions,
    ) -> Arc<dyn FileSystem> {
        if access == crate::builtins::BuiltinAccess::TrustedHost {
            Arc::clone(&self.fs)
        } else if let Some(scope) = extensions.scope() {
            crate::execution_capability::ExecutionFileSystem::wrap(Arc::clone(&self.fs), scope)
        } else {
            // Unit-level interpreter dispatch has no public request boundary
            // at which to install or revoke a lease. Production entry points
            // always bind a scope in `Bash::exec_with_options`.
            Arc::clone(&self.fs)
        }
    }

    /// Shared execution path for builtins regardless of source
    /// (baked-in, builder-`builtin`, or host registry).
    fn execute_builtin_arc<'a>(
        &'a mut self,
        name: &'a str,
        builtin: Arc<dyn Builtin>,
        access: crate::builtins::BuiltinAccess,
        args: &'a [String],
        stdin: Option<&'a crate::StreamData>,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        // Bundled = one of bashkit's own builtins (not host, resolver or
        // `BashBuilder::builtin` entries, whose `Err` stays fatal).
        let bundled = !self.custom_builtin_names.contains(name)
            && self
                .builtins
                .get(name)
                .is_some_and(|b| std::ptr::addr_eq(Arc::as_ptr(b), Arc::as_ptr(&builtin)));
        Box::pin(async move {
            // Fire before_tool hooks — may modify args or cancel the invocation
            let args = if !self.hooks.before_tool.is_empty() {
                let event = crate::hooks::ToolEvent {
                    name: name.to_string(),
                    args: args.to_vec(),
                    cwd: self.cwd.clone(), // clix patch: the hook sees the folder
                };
                match self.hooks.fire_before_tool(event) {
                    Some(modified) => std::borrow::Cow::Owned(modified.args),
                    None => {
                        let result = ExecResult::err(
                            self.diag(format!("{name}: cancelled by before_tool hook\n")),
                            1,
                        );
                        return self.redirect_result(result, redirects).await;
                    }
                }
            } else {
                std::borrow::Cow::Borrowed(args)
            };
            let args: &[String] = &args;
            // THREAT[TM-DOS-096]: Every builtin and host callback consumes the
            // same request budget. Pipeline/substitution descendants therefore
            // cannot refresh byte or work ceilings by changing subsystems.
            let consumer_bytes = args
                .iter()
                .fold(stdin.map_or(0, crate::StreamData::len), |total, arg| {
                    total.saturating_add(arg.len())
                });
            let _input_lease = self.execution_budget.admit_consumer(
                consumer_bytes,
                1 + u64::try_from(consumer_bytes / 1024).unwrap_or(u64::MAX),
            )?;
            if !self.hooks.before_tool.is_empty() {
                self.execution_budget.consume_work(100)?;
            }

            self.test_v_probe(name, args);
            // Check for execution plan first
            if !bundled || builtin.has_execution_plan() {
                let execution_extensions = self.current_execution_extensions();
                let fs = self.builtin_file_system(access, &execution_extensions);
                let shell_ref = ShellRef {
                    builtins: &self.builtins,
                    host_builtins: self.host_builtins.as_ref(),
                    functions: &self.scoped.functions,
                    aliases: Arc::make_mut(&mut self.scoped.aliases),
                    traps: Arc::make_mut(&mut self.scoped.traps),
                    err_trap_dormant: &mut self.err_trap_dormant,
                    debug_trap_dormant: &mut self.debug_trap_dormant,
                    var_attrs: Arc::make_mut(&mut self.scoped.var_attrs),
                    namerefs: Arc::make_mut(&mut self.scoped.namerefs),
                    dir_stack: Arc::make_mut(&mut self.scoped.dir_stack),
                    command_hash: Arc::make_mut(&mut self.scoped.command_hash),
                    execution_budget: &self.execution_budget,
                    set_vars: &self.test_set_vars,
                    call_stack: &self.call_stack,
                    history: &self.history,
                    limits: &self.limits,
                    jobs: &self.jobs,
                    execution_extensions,
                    stdout_pipe: None,
                    stdin_pipe: None,
                    stderr_pipe: None,
                    command_routes: None,
                    stdout_stream: None,
                    loop_depth: self.loop_depth,
                    return_depth: self.return_depth,
                    last_exit_code: self.last_exit_code,
                };
                let plan_ctx = builtins::Context {
                    args,
                    env: &self.env,
                    variables: Arc::make_mut(&mut self.scoped.variables),
                    cwd: &mut self.cwd,
                    fs,
                    stdin,
                    #[cfg(feature = "http_client")]
                    http_client: self.http_client.as_ref(),
                    #[cfg(feature = "git")]
                    git_client: self.git_client.as_deref(),
                    #[cfg(feature = "ssh")]
                    ssh_client: self.ssh_client.as_deref(),
                    shell: Some(shell_ref),
                };

                // `(*builtin)`: the `dyn Builtin` itself, not the forwarding
                // impl for `Arc`, which boxed a second future per call (clix
                // patch, "a builtin's fixed costs").
                let plan_result = AssertUnwindSafe((*builtin).execution_plan(&plan_ctx))
                    .catch_unwind()
                    .await;

                match plan_result {
                    Ok(Ok(Some(plan))) => {
                        let result = self.execute_builtin_plan(plan, redirects).await?;
                        return self.apply_after_tool(name, result);
                    }
                    Ok(Ok(None)) => { /* fall through to normal execute() */ }
                    Ok(Err(e)) => return Err(e),
                    Err(_panic) => {
                        let result = ExecResult::err(
                            self.diag(format!("{name}: builtin failed unexpectedly\n")),
                            1,
                        );
                        let result = self.apply_redirections(result, redirects).await?;
                        return self.apply_after_tool(name, result);
                    }
                }
            }

            let execution_extensions = self.current_execution_extensions();
            let fs = self.builtin_file_system(access, &execution_extensions);
            // /dev/stdin, /dev/stdout, /dev/stderr as file operands.
            let (fs, std_capture) = if crate::fs::args_name_std_stream(args) {
                let (fs, capture) = crate::fs::StdStreamsFs::wrap(
                    fs,
                    stdin.map_or(&[][..], crate::StreamData::as_bytes),
                    &self.execution_budget,
                    &self.limits,
                )?;
                (fs, Some(capture))
            } else {
                (fs, None)
            };
            let streaming_command = builtin.streams_io();
            let streaming_utility = bundled
                && matches!(name, "yes" | "seq" | "cat" | "grep" | "tr")
                && self.builtin_stdout_pipe.is_some();
            let routed_output = streaming_command || streaming_utility;
            let command_routes = if routed_output {
                self.builtin_stdout_pipe = self
                    .pipe_out
                    .clone()
                    .filter(|_| self.output_callback.is_some())
                    .or_else(|| {
                        self.output_callback
                            .as_ref()
                            .and_then(|_| self.execution_output())
                            .map(|o| o.stdout.clone())
                    });
                match self.live_command_routes(redirects, fs.clone()).await {
                    Ok(routes) => Some(routes),
                    Err(crate::Error::CommandFailure(message)) => {
                        return Ok(ExecResult::err(message, 1));
                    }
                    Err(error) => return Err(error),
                }
            } else {
                None
            };
            let stderr_pipe = if routed_output && self.output_callback.is_some() {
                self.execution_output().map(|o| o.stderr.clone())
            } else {
                None
            };
            let shell_ref = ShellRef {
                builtins: &self.builtins,
                host_builtins: self.host_builtins.as_ref(),
                functions: &self.scoped.functions,
                aliases: Arc::make_mut(&mut self.scoped.aliases),
                traps: Arc::make_mut(&mut self.scoped.traps),
                err_trap_dormant: &mut self.err_trap_dormant,
                debug_trap_dormant: &mut self.debug_trap_dormant,
                var_attrs: Arc::make_mut(&mut self.scoped.var_attrs),
                namerefs: Arc::make_mut(&mut self.scoped.namerefs),
                dir_stack: Arc::make_mut(&mut self.scoped.dir_stack),
                command_hash: Arc::make_mut(&mut self.scoped.command_hash),
                execution_budget: &self.execution_budget,
                set_vars: &self.test_set_vars,
                call_stack: &self.call_stack,
                history: &self.history,
                limits: &self.limits,
                jobs: &self.jobs,
                execution_extensions,
                stdout_pipe: self.builtin_stdout_pipe.take(),
                stdin_pipe: self.builtin_stdin_pipe.take(),
                stderr_pipe,
                command_routes,
                stdout_stream: None,
                loop_depth: self.loop_depth,
                return_depth: self.return_depth,
                last_exit_code: self.last_exit_code,
            };
            let mut ctx = builtins::Context {
                args,
                env: &self.env,
                variables: Arc::make_mut(&mut self.scoped.variables),
                cwd: &mut self.cwd,
                fs,
                stdin,
                #[cfg(feature = "http_client")]
                http_client: self.http_client.as_ref(),
                #[cfg(feature = "git")]
                git_client: self.git_client.as_deref(),
                #[cfg(feature = "ssh")]
                ssh_client: self.ssh_client.as_deref(),
                shell: Some(shell_ref),
            };

            let utility_io = if streaming_utility {
                let io = crate::command::CommandIo::new(&ctx)?;
                ctx.shell.as_mut().expect("builtin shell").stdout_stream = Some(io.stdout.clone());
                Some(io)
            } else {
                None
            };

            // THREAT[TM-INT-001]: Execute builtin with panic catching for security
            let result = AssertUnwindSafe((*builtin).execute(ctx))
                .catch_unwind()
                .await;

            let mut result = match result {
                Ok(Ok(exec_result)) => exec_result,
                // A builtin's own usage error (bad regex, awk syntax error,
                // missing operand) fails only that command, as in bash:
                // exit 2 with the message on stderr, and the script goes on.
                // Limits, cancellation and I/O errors still abort.
                Ok(Err(crate::error::Error::Execution(msg))) if bundled => {
                    builtin_usage_error(&msg)
                }
                Ok(Err(crate::error::Error::Regex(e))) if bundled => {
                    builtin_usage_error(&format!("{name}: {e}"))
                }
                Ok(Err(crate::Error::Io(error))) if utility_io.is_some() => ExecResult {
                    exit_code: Box::pin(
                        utility_io
                            .as_ref()
                            .expect("routed utility")
                            .write_error(name, error),
                    )
                    .await?,
                    ..Default::default()
                },
                Ok(Err(e)) => return Err(e),
                Err(_panic) => ExecResult::err(
                    self.diag(format!("{name}: builtin failed unexpectedly\n")),
                    1,
                ),
            };
            // Before `/dev/stderr` operand data is appended and before any
            // redirect or streaming emission sees the text.
            // Keep rewritten byte/text storage charged until redirects and
            // result hooks finish consuming it, including discarded stderr.
            let mut diagnostic_storage = None;
            if bundled
                && !result.stderr.is_empty()
                && let Some((stderr, storage)) = prefix_builtin_diagnostics(
                    &result.stderr,
                    name,
                    &self.diag_prefix(),
                    &self.execution_budget,
                )?
            {
                result.stderr = stderr;
                diagnostic_storage = Some(storage);
            }
            // Retain both materialized representations through redirects and
            // hooks. Collection must not replace admission with a late charge.
            let std_storage = if let Some(capture) = std_capture {
                Some(capture.lock().unwrap_or_else(|e| e.into_inner()).collect(
                    &mut result,
                    &self.execution_budget,
                    &self.limits,
                )?)
            } else {
                None
            };
            self.execution_budget.consume_work(
                u64::try_from(
                    result
                        .stdout
                        .len()
                        .saturating_add(result.stderr.len())
                        .div_ceil(1024),
                )
                .unwrap_or(u64::MAX),
            )?;

            self.apply_builtin_side_effects(&mut result, bundled && leaves_variables_alone(name))
                .await?;

            let result = if let Some(io) = utility_io {
                Box::pin(io.complete(name, result)).await?
            } else if streaming_command {
                result
            } else {
                self.apply_redirections(result, redirects).await?
            };
            let result = self.apply_after_tool(name, result);
            drop(diagnostic_storage);
            drop(std_storage);
            result
        })
    }

    /// Apply `after_tool` interceptor decisions to the result returned to callers.
    fn apply_after_tool(&self, name: &str, result: ExecResult) -> Result<ExecResult> {
        if self.hooks.after_tool.is_empty() {
            return Ok(result);
        }
        self.execution_budget.consume_work(100)?;
        self.execution_budget.consume_input(result.stdout.len())?;
        let event = crate::hooks::ToolResult {
            name: name.to_string(),
            stdout: result.stdout.text_lossy().into_owned(),
            exit_code: result.exit_code,
        };
        match self.hooks.fire_after_tool(event) {
            Some(event) => {
                self.execution_budget.consume_work(
                    u64::try_from(event.stdout.len().div_ceil(1024)).unwrap_or(u64::MAX),
                )?;
                Ok(ExecResult {
                    stdout: event.stdout.into(),
                    exit_code: event.exit_code,
                    ..result
                })
            }
            None => Ok(ExecResult::err(
                self.diag(format!("{name}: cancelled by after_tool hook\n")),
                1,
            )),
        }
    }

    fn is_special_builtin_name(name: &str) -> bool {
        SPECIAL_BUILTIN_NAMES.contains(&name)
    }

    /// Whether the interpreter runs `name` itself: the special builtins, and
    /// the history/completion/bind builtins (`history.rs`, `completion.rs`,
    /// `readline_bind.rs`) unless filtered out of the builtin map. bashkit's
    /// own `history --grep/--cwd/...` stays the registered builtin.
    fn routes_to_interpreter(&self, name: &str, args: &[String]) -> bool {
        Self::is_special_builtin_name(name)
            || (INTERPRETER_SHELL_BUILTINS.contains(&name)
                && self.builtins.contains_key(name)
                && !(name == "history" && Self::history_extension_args(args)))
    }

    fn history_extension_args(args: &[String]) -> bool {
        args.iter().any(|a| a.starts_with("--") && a.len() > 2)
    }

    async fn execute_special_builtin_with_hooks(
        &mut self,
        name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let args = if !self.hooks.before_tool.is_empty() {
            let event = crate::hooks::ToolEvent {
                name: name.to_string(),
                args: args.to_vec(),
                cwd: self.cwd.clone(), // clix patch: the hook sees the folder
            };
            match self.hooks.fire_before_tool(event) {
                Some(modified) => std::borrow::Cow::Owned(modified.args),
                None => {
                    let result = ExecResult::err(
                        self.diag(format!("{name}: cancelled by before_tool hook\n")),
                        1,
                    );
                    return self.redirect_result(result, redirects).await;
                }
            }
        } else {
            std::borrow::Cow::Borrowed(args)
        };
        let consumer_bytes = args.iter().fold(
            stdin.as_ref().map_or(0, crate::StreamData::len),
            |total, arg| total.saturating_add(arg.len()),
        );
        let execution_budget = self.execution_budget.clone();
        execution_budget.consume_input(consumer_bytes)?;
        execution_budget.consume_work(1)?;
        if !self.hooks.before_tool.is_empty() {
            execution_budget.consume_work(100)?;
        }
        let _input_lease = execution_budget.lease_bytes(consumer_bytes)?;

        let result = self
            .dispatch_special_builtin(name, &args, stdin, redirects)
            .await
            .expect("special builtin name checked before dispatch")?;
        self.apply_after_tool(name, result)
    }

    /// Dispatch an interpreter-level (special) builtin by name.
    /// Returns `Some(result)` if handled, `None` if not a special builtin.
    /// history/fc/completion/bind builtins, boxed out of line so
    /// `dispatch_special_builtin` (on every command's path) holds one
    /// pointer instead of each builtin's future (stack budget).
    #[inline(never)]
    fn run_interactive_builtin<'a>(
        &'a mut self,
        name: &'a str,
        args: &'a [String],
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        match name {
            "history" => Box::pin(self.execute_history_builtin(args, redirects)),
            "fc" => Box::pin(self.execute_fc_builtin(args, redirects)),
            "compgen" => Box::pin(self.execute_compgen_builtin(args, redirects)),
            "complete" => Box::pin(self.execute_complete_builtin(args, redirects)),
            "compopt" => Box::pin(self.execute_compopt_builtin(args, redirects)),
            _ => Box::pin(self.execute_bind_builtin(args, redirects)),
        }
    }

    async fn dispatch_special_builtin(
        &mut self,
        name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Option<Result<ExecResult>> {
        if !self.shell_features.has_script_execution()
            && matches!(name, "exec" | "bash" | "sh" | "source" | ".")
        {
            return Some(Ok(ExecResult::err(
                self.diag(format!("{name}: command not found\n")),
                127,
            )));
        }

        match name {
            "exec" => Some(Box::pin(self.execute_exec_builtin(args, redirects)).await),
            "local" => Some(
                self.execute_declaration_builtin(name, declare::DeclKind::Local, args, redirects)
                    .await,
            ),
            "export" => Some(
                self.execute_declaration_builtin(name, declare::DeclKind::Export, args, redirects)
                    .await,
            ),
            "readonly" => Some(
                self.execute_declaration_builtin(
                    name,
                    declare::DeclKind::Readonly,
                    args,
                    redirects,
                )
                .await,
            ),
            "bash" | "sh" => Some(self.execute_shell(name, args, stdin, redirects).await),
            "source" | "." => Some(Box::pin(self.execute_source(name, args, redirects)).await),
            "eval" => Some(Box::pin(self.execute_eval(args, stdin, redirects)).await),
            "command" => Some(Box::pin(self.execute_command_builtin(args, stdin, redirects)).await),
            "builtin" => Some(self.execute_builtin_builtin(args, stdin, redirects).await),
            "declare" | "typeset" => Some(
                self.execute_declaration_builtin(name, declare::DeclKind::Declare, args, redirects)
                    .await,
            ),
            "let" => Some(self.execute_let_builtin(args, redirects).await),
            // bashkit's own `history --grep/--cwd/...` stays the registered builtin.
            "history" | "fc" | "compgen" | "complete" | "compopt" | "bind"
                if !(name == "history" && Self::history_extension_args(args)) =>
            {
                Some(self.run_interactive_builtin(name, args, redirects).await)
            }
            "unset" => Some(Box::pin(self.execute_unset_builtin(args, redirects)).await),
            "getopts" => Some(self.execute_getopts(args, redirects).await),
            // Bare `set`: the same sorted, quoted listing as `declare`.
            "set" if args.is_empty() => {
                let result = ExecResult::ok(self.format_set_listing());
                Some(self.apply_redirections(result, redirects).await)
            }
            _ => None,
        }
    }

    /// True if `name` resolves through the host-owned builtin registry.
    fn has_host_builtin(&self, name: &str) -> bool {
        self.host_builtins
            .as_ref()
            .is_some_and(|reg| reg.lookup(name).is_some())
    }

    /// Sorted names of all dispatchable builtins (registered + special + host
    /// registry). See [`crate::Bash::builtin_names`].
    pub(crate) fn builtin_names(&self) -> Vec<String> {
        merged_builtin_names(&self.builtins, self.host_builtins.as_ref())
    }

    // THREAT[TM-DOS-089]: Box the final dispatch split so function lookup,
    // special builtin handling, registered builtin execution, and path search
    // do not contribute another large async frame per nested substitution level.
    fn dispatch_command<'a>(
        &'a mut self,
        name: &'a str,
        command: &'a SimpleCommand,
        args: Vec<String>,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        // Functions first, in their own small future: a function call is the
        // recursion path, and the builtin/path-search arms below would
        // otherwise add their large frame to every call level
        // (THREAT[TM-DOS-020]: bounded recursion on a 2 MiB stack).
        // In POSIX mode a special builtin wins over a function of its name.
        if let Some(func_def) = self.scoped.functions.get(name).cloned()
            && !self.posix_special_builtin(name)
        {
            return Box::pin(async move {
                self.execute_function_call(name, &func_def, args, stdin, &command.redirects)
                    .await
            });
        }
        self.dispatch_non_function(name, command, args, stdin)
    }

    fn dispatch_non_function<'a>(
        &'a mut self,
        name: &'a str,
        command: &'a SimpleCommand,
        args: Vec<String>,
        stdin: Option<crate::StreamData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // Interpreter-level special builtins. A bare `set` lists every
            // variable (arrays included), which needs interpreter state.
            // The paths other than a registered builtin have large futures:
            // boxed, so this one stays small, as it is copied on every
            // command (clix patch, "a command's fixed costs").
            if self.routes_to_interpreter(name, &args) || (name == "set" && args.is_empty()) {
                return Box::pin(self.execute_special_builtin_with_hooks(
                    name,
                    &args,
                    stdin.clone(),
                    &command.redirects,
                ))
                .await;
            }

            // Host-registered builtins (mutable, may override baked-in builtins).
            if let Some(builtin) = self
                .host_builtins
                .as_ref()
                .and_then(|reg| reg.lookup_entry(name))
            {
                return self
                    .execute_host_builtin(name, builtin, &args, stdin.as_ref(), &command.redirects)
                    .await;
            }

            // Registered builtins
            if self.builtins.contains_key(name) {
                return self
                    .execute_registered_builtin(name, &args, stdin.as_ref(), &command.redirects)
                    .await;
            }

            // Script execution by path
            if name.contains('/') {
                if !self.shell_features.has_script_execution() {
                    return Ok(ExecResult::err(
                        self.diag(format!("{name}: command not found\n")),
                        127,
                    ));
                }
                return Box::pin(self.try_execute_script_by_path(
                    name,
                    &args,
                    stdin,
                    &command.redirects,
                ))
                .await;
            }

            // The `$PATH` search consumes `stdin`, so keep a copy for the
            // resolver — but only when one is installed, so the common path
            // does not pay to clone piped input.
            let resolver_stdin = self
                .command_resolver
                .is_some()
                .then(|| stdin.clone())
                .flatten();

            // $PATH search
            if self.shell_features.has_script_execution()
                && let Some(result) = Box::pin(self.try_execute_script_via_path_search(
                    name,
                    &args,
                    stdin,
                    &command.redirects,
                ))
                .await?
            {
                return Ok(result);
            }

            // Last-chance resolver. Dispatches through `execute_builtin_arc`
            // like every other builtin, so `before_tool` fires with the
            // resolved name and can veto it.
            // THREAT[TM-INT-011]: Resolver host code receives attacker-controlled names.
            // Contain its panics before dispatching the builtin it returns.
            let resolved = match self.command_resolver.as_ref() {
                Some(resolver) => {
                    match std::panic::catch_unwind(AssertUnwindSafe(|| resolver.resolve(name))) {
                        Ok(builtin) => builtin,
                        Err(_panic) => {
                            return Ok(ExecResult::err(
                                self.diag(format!("{name}: resolver failed unexpectedly\n")),
                                1,
                            ));
                        }
                    }
                }
                None => None,
            };
            if let Some(builtin) = resolved {
                return self
                    .execute_builtin_arc(
                        name,
                        builtin,
                        crate::builtins::BuiltinAccess::Scoped,
                        &args,
                        resolver_stdin.as_ref(),
                        &command.redirects,
                    )
                    .await;
            }

            // Command not found
            let host_names: Vec<String> = self
                .host_builtins
                .as_ref()
                .map(|reg| reg.names())
                .unwrap_or_default();
            let known: Vec<&str> = self
                .builtins
                .keys()
                .map(|s| s.as_str())
                .chain(self.scoped.functions.keys().map(|s| s.as_str()))
                .chain(self.scoped.aliases.keys().map(|s| s.as_str()))
                .chain(host_names.iter().map(|s| s.as_str()))
                .collect();
            let msg = command_not_found_message(&self.diag_prefix(), name, &known);
            // bash sets up the redirects before looking the name up, so
            // `nocmd 2>/dev/null` is silent and `nocmd 2>&1` reports on stdout.
            self.redirect_result(ExecResult::err(msg, 127), &command.redirects)
                .await
        })
    }

    /// Execute a script file by resolved path.
    ///
    /// Bash behavior for path-based commands (name contains `/`):
    /// 1. Resolve path (absolute or relative to cwd)
    /// 2. stat() — if not found: "No such file or directory" (exit 127)
    /// 3. If directory: "Is a directory" (exit 126)
    /// 4. If not executable (mode & 0o111 == 0): "Permission denied" (exit 126)
    /// 5. Read file, strip shebang, parse, execute in call frame
    async fn try_execute_script_by_path(
        &mut self,
        name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let path = self.resolve_path(name);

        // bash opens the command's redirects before it tries to run the
        // file, so `./missing 2>/dev/null` reports nothing.
        let raw = match self.read_executable(name, &path).await {
            Ok(raw) => raw,
            Err(failed) => return self.redirect_result(failed, redirects).await,
        };
        // A root-filesystem stub (`/usr/bin/env`) runs the builtin it names;
        // `/bin/bash` starts a child shell as `bash` does.
        if let Some(cmd) = crate::fs::stub_command(&raw) {
            if matches!(cmd, "bash" | "sh") {
                let cmd = cmd.to_string();
                return Box::pin(self.execute_shell(&cmd, args, stdin, redirects)).await;
            }
            if self.builtins.contains_key(cmd) {
                let cmd = cmd.to_string();
                return self
                    .execute_registered_builtin(&cmd, args, stdin.as_ref(), redirects)
                    .await;
            }
        }
        let content = decode_file_bytes_for_path(&path, &raw);

        self.execute_script_content(name, &content, args, stdin, redirects)
            .await
    }

    /// Apply `redirects` to a result the command produced without running
    /// (its own error). THREAT[TM-DOS-089]: boxed so the command-dispatch
    /// futures on the `$(...)` recursion path stay small.
    fn redirect_result<'a>(
        &'a mut self,
        result: ExecResult,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(self.apply_redirections(result, redirects))
    }

    /// stat + permission checks + read for a command run by path. The error
    /// is the command's result (bash's wording and 126/127 status).
    async fn read_executable(
        &self,
        name: &str,
        path: &Path,
    ) -> std::result::Result<Vec<u8>, ExecResult> {
        let missing = || {
            ExecResult::err(
                self.diag(format!("{name}: No such file or directory\n")),
                127,
            )
        };
        // A component past NAME_MAX fails before any lookup (execve's
        // ENAMETOOLONG), which bash reports as status 126.
        if path.components().any(|c| c.as_os_str().len() > 255) {
            return Err(ExecResult::err(
                self.diag(format!("{name}: File name too long\n")),
                126,
            ));
        }
        let meta = self.fs.stat(path).await.map_err(|_| missing())?;
        if meta.file_type.is_dir() {
            return Err(ExecResult::err(
                self.diag(format!("{name}: Is a directory\n")),
                126,
            ));
        }
        if meta.mode & 0o111 == 0 {
            return Err(ExecResult::err(
                self.diag(format!("{name}: Permission denied\n")),
                126,
            ));
        }
        self.fs.read_file(path).await.map_err(|_| missing())
    }

    /// Search $PATH for an executable script and run it.
    ///
    /// Returns `Ok(None)` if no matching file found (caller emits "command not found").
    /// Resolve a command name to its full path via PATH search on VFS.
    /// Returns the resolved path string if found, None otherwise.
    /// Commands that get a `/bin` + `/usr/bin` stub in the root filesystem:
    /// every registered builtin that also exists as a program on a real
    /// system (shell-only builtins like `cd` do not).
    pub(crate) fn rootfs_command_names(&self) -> impl Iterator<Item = &str> + Clone {
        // `bash`/`sh` are dispatched by the interpreter, not the map, but
        // real systems ship them as `/bin/bash` and `/bin/sh`. Without
        // script execution they do not run, so no stub either.
        let shells: &'static [&'static str] = if self.shell_features.has_script_execution() {
            &["bash", "sh"]
        } else {
            &[]
        };
        self.builtins
            .keys()
            .map(String::as_str)
            .filter(|n| !ENV_SHELL_ONLY_BUILTINS.contains(n))
            .chain(shells.iter().copied())
    }

    async fn resolve_command_path(&self, name: &str) -> Option<String> {
        if !self.shell_features.has_script_execution() {
            return None;
        }
        if let Some(path) = self
            .scoped
            .command_hash
            .get(name)
            .and_then(|e| e.path.as_deref().map(str::to_string))
        {
            return Some(path);
        }
        self.search_path_file(name).await
    }

    /// bash's `find_user_command`: the first executable `name` along `PATH`,
    /// else the first regular file of that name (which then fails with
    /// "Permission denied"). Relative entries (`_tmp`, and an empty one for
    /// `.`) are searched from the current directory and kept relative in the
    /// result, as bash shows them.
    async fn search_path_file(&self, name: &str) -> Option<String> {
        let path_var = self
            .scoped
            .variables
            .get("PATH")
            .or_else(|| self.env.get("PATH"))
            .cloned()
            .unwrap_or_default();
        let mut fallback = None;
        for dir in path_var.split(':') {
            let candidate = builtins::path_candidate(dir, name);
            let Ok(meta) = self.fs.stat(&self.resolve_path(&candidate)).await else {
                continue;
            };
            if !meta.file_type.is_file() {
                continue;
            }
            if meta.mode & 0o111 != 0 {
                return Some(candidate);
            }
            fallback.get_or_insert(candidate);
        }
        fallback
    }

    /// Run `name` from `$PATH`: its hashed file if `hash` remembers one, else
    /// the file the search finds (which is then hashed). `Ok(None)` when no
    /// file matches (the caller reports "command not found"). A hashed file
    /// that is gone fails with "No such file or directory" (bash does not
    /// search again until `hash -r`).
    async fn try_execute_script_via_path_search(
        &mut self,
        name: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<Option<ExecResult>> {
        let hashed = self
            .scoped
            .command_hash
            .get(name)
            .filter(|_| !self.temp_path)
            .and_then(|e| e.path.as_deref().map(str::to_string));
        let found = match hashed {
            Some(path) => path,
            None => match self.search_path_file(name).await {
                Some(path) => path,
                None => return Ok(None),
            },
        };
        if !self.temp_path
            && self
                .scoped
                .variables
                .get("SHOPT_h")
                .is_none_or(|v| v != "0")
        {
            Arc::make_mut(&mut self.scoped.command_hash).hit(
                name,
                Some(&found),
                &self.execution_budget,
            )?;
        }
        let resolved = self.resolve_path(&found);
        let raw = match self.read_executable(&found, &resolved).await {
            Ok(raw) => raw,
            Err(failed) => return self.redirect_result(failed, redirects).await.map(Some),
        };
        // A root-filesystem stub (`/usr/bin/env`) runs the builtin it names;
        // `/bin/bash` starts a child shell as `bash` does.
        if let Some(cmd) = crate::fs::stub_command(&raw) {
            if matches!(cmd, "bash" | "sh") {
                let cmd = cmd.to_string();
                return Box::pin(self.execute_shell(&cmd, args, stdin, redirects))
                    .await
                    .map(Some);
            }
            if self.builtins.contains_key(cmd) {
                let cmd = cmd.to_string();
                return self
                    .execute_registered_builtin(&cmd, args, stdin.as_ref(), redirects)
                    .await
                    .map(Some);
            }
        }
        let script_text = decode_file_bytes_for_path(&resolved, &raw);
        self.execute_script_content(&found, &script_text, args, stdin, redirects)
            .await
            .map(Some)
    }

    /// Parse and execute script content in a new call frame.
    ///
    /// Shared by path-based and $PATH-based script execution.
    /// Sets up $0 = script name, $1..N = args, strips shebang.
    async fn execute_script_content(
        &mut self,
        name: &str,
        content: &str,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // `#!/usr/bin/env python3` (or `#!/usr/bin/python3`, `#!/usr/bin/awk -f`)
        // names a registered non-shell builtin: run it on the script path, as
        // the kernel would exec the interpreter. Shell or unknown interpreters
        // fall through to running the content as bash.
        if let Some((cmd, mut argv)) = shebang_interpreter(content)
            && self.builtins.contains_key(cmd.as_str())
            && !ENV_SHELL_ONLY_BUILTINS.contains(&cmd.as_str())
        {
            argv.push(name.to_string());
            argv.extend(args.iter().cloned());
            return self
                .execute_registered_builtin(&cmd, &argv, stdin.as_ref(), redirects)
                .await;
        }
        // Strip shebang line if present
        let script_text = if content.starts_with("#!") {
            content
                .find('\n')
                .map(|pos| &content[pos + 1..])
                .unwrap_or("")
        } else {
            content
        };

        self.execution_budget.consume_input(script_text.len())?;
        let script = match self.parse_shell_text(script_text) {
            Ok(s) => s,
            Err(e) => {
                return Ok(ExecResult::err(self.diag(format!("{name}: {e}\n")), 2));
            }
        };

        // Subprocess isolation: path-based script execution only inherits
        // exported variables (env), not the full parent shell state.
        // This matches real bash behavior where ./script.sh spawns a subprocess.
        // `bash -c '...'` subprocess: save then reset. Each Arc clone is an
        // O(1) refcount bump now; the child resets its own state and the
        // parent restores by dropping the child's Arcs and putting these back.
        let saved_vars = Arc::clone(&self.scoped.variables);
        let saved_arrays = Arc::clone(&self.scoped.arrays);
        let saved_assoc = Arc::clone(&self.scoped.assoc_arrays);
        let saved_functions = Arc::clone(&self.scoped.functions);
        let saved_function_files = Arc::clone(&self.scoped.function_files);
        let saved_traps = Arc::clone(&self.scoped.traps);
        let saved_aliases = Arc::clone(&self.scoped.aliases);
        let saved_var_attrs = Arc::clone(&self.scoped.var_attrs);
        let saved_namerefs = Arc::clone(&self.scoped.namerefs);
        let saved_flags = self.flags;
        let saved_call_stack = self.call_stack.clone();
        let saved_exit = self.last_exit_code;
        let saved_coproc = self.coproc_buffers.clone();
        let saved_env = self.env.clone();
        let saved_memory_budget = self.memory_budget.clone();
        let saved_exec_fd_table = self.exec_fd_table.clone();
        let saved_exec_input_fds = self.exec_input_fds.clone();
        // The child process has its own working directory (`cd` stays there).
        let saved_cwd = self.cwd.clone();

        // Child only sees exported variables (env), not all shell variables.
        // Reset last_exit_code so $? starts at 0 (matches real bash subprocess).
        // Clear nounset_error to prevent parent expansion errors from leaking.
        // Reset attributes/namerefs/flags too — the child gets a fresh option
        // surface like real bash.
        self.scoped.variables = Arc::new((*self.env).clone());
        self.scoped.arrays = Arc::new(HashMap::new());
        self.arrays_mut()
            .insert("BASH_VERSINFO".to_string(), compat_bash_versinfo_array());
        self.scoped.assoc_arrays = Arc::new(HashMap::new());
        self.scoped.functions = Arc::new(HashMap::new());
        self.scoped.function_files = Arc::default();
        self.scoped.traps = Arc::new(HashMap::new());
        self.scoped.aliases = Arc::new(HashMap::new());
        self.scoped.var_attrs = Arc::new(HashMap::new());
        self.scoped.namerefs = Arc::new(HashMap::new());
        self.flags = BashFlags::empty();
        // The child inherits the readable fds the parent opened (`exec 3<f`,
        // `./x 8<<EOF`); coproc pipes stay with the shell that owns them.
        self.coproc_buffers
            .retain(|_, fd| matches!(fd, coproc::InputFd::Lines(_)));
        self.last_exit_code = 0;
        self.nounset_error = None;
        if let Ok(mut e) = self.arith_error.lock() {
            *e = None;
        }

        // Push call frame: $0 = script name, $1..N = args
        self.call_stack = vec![CallFrame {
            name: name.to_string(),
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: args.to_vec(),
            keeps_arg0: false,
        }];

        // Set up BASH_SOURCE for the subprocess
        let saved_source_stack = self.bash_source_stack.clone();
        self.bash_source_stack = vec![SourceFrame::script(name)];
        self.update_bash_source();

        // Forward pipeline stdin so commands inside the script (cat, read, etc.) can consume it
        let prev_pipeline_stdin = self.pipeline_stdin.take();
        // Stdin shared with the caller (no pipe or redirect of its own): what
        // the child's `read` consumes is gone for the caller too.
        let shares_caller_stdin = stdin.is_some() && stdin == prev_pipeline_stdin;
        self.pipeline_stdin = stdin;

        // A script run by path is a non-interactive child shell with its
        // own line numbers, outside any loop, function or sourced file.
        let saved_loop_depth = std::mem::replace(&mut self.loop_depth, 0);
        let saved_return_depth = std::mem::replace(&mut self.return_depth, 0);
        let saved_line = self.current_line;
        let saved_interactive = std::mem::replace(&mut self.interactive, false);
        // Output the script's own redirects will route must not stream from
        // the child first (`./x.sh &>log` printed x's output and logged it),
        // as for `bash -c` and functions.
        let region = self.enter_output_region(redirects);
        let result = self.execute_script_body(&script, true, false).await;
        self.leave_output_region(region);
        self.interactive = saved_interactive;
        self.current_line = saved_line;
        self.loop_depth = saved_loop_depth;
        self.return_depth = saved_return_depth;
        let child_stdin_left = self.pipeline_stdin.take();

        // Restore full parent state — child mutations don't propagate
        self.scoped.variables = saved_vars;
        self.scoped.arrays = saved_arrays;
        self.scoped.assoc_arrays = saved_assoc;
        self.scoped.functions = saved_functions;
        self.scoped.function_files = saved_function_files;
        self.scoped.traps = saved_traps;
        self.scoped.aliases = saved_aliases;
        self.scoped.var_attrs = saved_var_attrs;
        self.scoped.namerefs = saved_namerefs;
        self.flags = saved_flags;
        self.call_stack = saved_call_stack;
        self.last_exit_code = saved_exit;
        self.coproc_buffers = saved_coproc;
        self.env = saved_env;
        self.memory_budget = saved_memory_budget;
        self.exec_fd_table = saved_exec_fd_table;
        self.exec_input_fds = saved_exec_input_fds;
        self.bash_source_stack = saved_source_stack;
        self.cwd = saved_cwd;
        self.pipeline_stdin = if shares_caller_stdin {
            child_stdin_left
        } else {
            prev_pipeline_stdin
        };

        match result {
            Ok(mut exec_result) => {
                // Handle return - convert Return control flow to exit code
                if let ControlFlow::Return(code) = exec_result.control_flow {
                    exec_result.exit_code = code;
                    exec_result.control_flow = ControlFlow::None;
                }
                self.apply_redirections(exec_result, redirects).await
            }
            Err(e) => Err(e),
        }
    }

    /// Execute `source` / `.` - read and execute commands from a file in current shell.
    ///
    /// Bash behavior:
    /// - If filename contains a slash, use it directly (absolute or relative to cwd)
    /// - If filename has no slash, search $PATH directories
    /// - Extra arguments become positional parameters ($1, $2, ...) during sourcing
    /// - Original positional parameters are restored after sourcing completes
    async fn execute_source(
        &mut self,
        name: &str,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // `source -- FILE` drops the `--`; any other leading `-x` is an
        // invalid option (status 2), as in bash.
        let args = match args.first().map(String::as_str) {
            Some("--") => &args[1..],
            Some(flag) if flag.len() > 1 && flag.starts_with('-') => {
                let c = flag[1..].chars().next().unwrap_or('-');
                let msg = self.diag(format!(
                    "{name}: -{c}: invalid option\n\
                     {name}: usage: {name} filename [arguments]\n"
                ));
                return self
                    .redirect_result(ExecResult::err(msg, 2), redirects)
                    .await;
            }
            _ => args,
        };
        let filename = match args.first() {
            Some(f) => f,
            None => {
                let msg = self.diag(format!(
                    "{name}: filename argument required\n\
                     {name}: usage: {name} filename [arguments]\n"
                ));
                return self
                    .redirect_result(ExecResult::err(msg, 2), redirects)
                    .await;
            }
        };

        // Resolve the file path:
        // - If filename contains '/', resolve relative to cwd
        // - Otherwise, search $PATH directories (bash behavior)
        let content = if filename.contains('/') {
            let path = self.resolve_path(filename);
            match self.fs.read_file(&path).await {
                Ok(c) => decode_file_bytes_for_path(&path, &c),
                Err(_) => {
                    let result = ExecResult::err(
                        self.diag(format!("{filename}: No such file or directory\n")),
                        1,
                    );
                    return self.redirect_result(result, redirects).await;
                }
            }
        } else {
            // Search PATH for the file
            let mut found = None;
            let path_var = self
                .scoped
                .variables
                .get("PATH")
                .or_else(|| self.env.get("PATH"))
                .cloned()
                .unwrap_or_default();
            // `shopt -u sourcepath` turns the PATH search off (on by default).
            let sourcepath = self
                .scoped
                .variables
                .get("SHOPT_sourcepath")
                .is_none_or(|v| v != "0");
            for dir in path_var.split(':').filter(|_| sourcepath) {
                if dir.is_empty() {
                    continue;
                }
                // Relative entries (`dir`) are searched from the cwd.
                let candidate = self.resolve_path(&builtins::path_candidate(dir, filename));
                if !self
                    .fs
                    .stat(&candidate)
                    .await
                    .is_ok_and(|m| m.file_type.is_file())
                {
                    continue;
                }
                if let Ok(c) = self.fs.read_file(&candidate).await {
                    found = Some(decode_file_bytes_for_path(&candidate, &c));
                    break;
                }
            }
            // Also try cwd as fallback (bash sources from cwd too)
            if found.is_none() {
                let path = self.resolve_path(filename);
                if let Ok(c) = self.fs.read_file(&path).await {
                    found = Some(decode_file_bytes_for_path(&path, &c));
                }
            }
            match found {
                Some(c) => c,
                None => {
                    let result = ExecResult::err(
                        self.diag(format!("{filename}: No such file or directory\n")),
                        1,
                    );
                    return self.redirect_result(result, redirects).await;
                }
            }
        };

        let script = match self.parse_embedded_script(&content).await {
            Ok(script) => script,
            Err(crate::error::Error::Parse { message, line, .. }) => {
                // Like bash: the sourced file names itself, with the line.
                let report =
                    crate::error::syntax_report(filename, &content, &message, line.max(1), 0);
                let result = ExecResult::err(report, 2);
                return self.redirect_result(result, redirects).await;
            }
            Err(e) => return Err(e),
        };

        // Set positional parameters if extra arguments provided.
        // Save and restore the caller's positional params.
        let source_args: Vec<String> = args[1..].to_vec();
        let has_source_args = !source_args.is_empty();

        let saved_positional = if has_source_args {
            let saved = self.call_stack.last().map(|frame| frame.positional.clone());
            // Push a temporary call frame for positional params
            if self.call_stack.is_empty() {
                self.call_stack.push(CallFrame {
                    name: filename.clone(),
                    saved_vars: HashMap::new(),
                    is_function: false,
                    local_arrays: HashMap::new(),
                    local_assoc_arrays: HashMap::new(),
                    positional: source_args,
                    keeps_arg0: true,
                });
            } else if let Some(frame) = self.call_stack.last_mut() {
                frame.positional = source_args;
            }
            saved
        } else {
            None
        };

        // THREAT[TM-DOS-056]: Check source depth (uses function depth limit)
        if let Err(depth_error) = self.counters.push_function(&self.limits) {
            // THREAT[TM-DOS-020]: a depth trip inside a trap handler must
            // still fail the execution instead of silently stopping the
            // recursion (the `source` status mapping below would hide it).
            if self.in_trap {
                self.note_trap_depth_error(depth_error);
            }
            return Err(crate::error::Error::Execution(format!(
                "source: {}: maximum source depth exceeded",
                filename
            )));
        }

        // Track source file for BASH_SOURCE
        self.bash_source_stack.push(SourceFrame {
            file: Arc::from(filename.as_str()),
            funcname: "source".to_string(),
            call_line: self.current_line,
            is_function: false,
        });
        self.update_bash_source();

        // Execute the script commands in the current shell context.
        // Use execute_script_body (not execute) to preserve depth counters.
        self.return_depth += 1;
        self.source_depth += 1;
        let emit_before = self.output_emit_count;
        self.xtrace_depth += 1;
        let tempenv_pushed = self.push_pending_tempenv(false);
        let region = self.enter_output_region(redirects);
        // THREAT[TM-DOS-020]: Box the sourced-body execution so a source /
        // trap recursion cycle cannot grow the parent future with each
        // nesting level; the shared depth charge above then trips first.
        let mut exec_result = Box::pin(self.execute_script_body(&script, false, true)).await;
        self.leave_output_region(region);
        if tempenv_pushed {
            self.tempenv_frames.pop();
        }
        self.xtrace_depth -= 1;
        // The RETURN trap runs once the `source` frame is gone: its
        // `FUNCNAME[0]` names the caller.
        self.bash_source_stack.pop();
        self.update_bash_source();
        if let Ok(r) = &mut exec_result {
            Box::pin(self.run_return_trap(r, emit_before)).await;
        }
        self.return_depth -= 1;
        self.source_depth -= 1;

        // Pop source depth (BASH_SOURCE went before the RETURN trap).
        self.counters.pop_function();

        let mut result = exec_result?;
        Self::end_abort_at_boundary(&mut result);
        // `return` ends the sourced file with its status.
        if let ControlFlow::Return(code) = result.control_flow {
            result.exit_code = code;
            result.control_flow = ControlFlow::None;
        }

        // `return N` inside a sourced script is the status of `source`, and
        // stops the sourced file only, not the script that sourced it.
        if let ControlFlow::Return(code) = result.control_flow {
            result.exit_code = code;
            result.control_flow = ControlFlow::None;
        }

        // Restore positional parameters
        if has_source_args {
            if let Some(saved) = saved_positional {
                if let Some(frame) = self.call_stack.last_mut() {
                    frame.positional = saved;
                }
            } else {
                // We pushed a frame; pop it
                self.pop_call_frame();
            }
        }

        // Apply redirections
        result = self.apply_redirections(result, redirects).await?;
        Ok(result)
    }

    /// Execute `eval` - parse and execute concatenated arguments
    async fn execute_eval(
        &mut self,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // bash's `eval` takes no options but still parses them: a leading
        // `--` is dropped and `-x` is an invalid option (status 2). A bare
        // `-` is an ordinary word.
        let args = match args.first().map(String::as_str) {
            Some("--") => &args[1..],
            Some(flag) if flag.len() > 1 && flag.starts_with('-') => {
                let c = flag[1..].chars().next().unwrap_or('-');
                let result = ExecResult::err(
                    format!(
                        "{}eval: -{c}: invalid option\neval: usage: eval [arg ...]\n",
                        self.diag_prefix()
                    ),
                    2,
                );
                return self.redirect_result(result, redirects).await;
            }
            _ => args,
        };
        if args.is_empty() {
            return Ok(ExecResult::ok(String::new()));
        }

        let cmd = args.join(" ");
        let script = match self.parse_embedded_script(&cmd).await {
            Ok(script) => script,
            Err(crate::error::Error::Parse { message, line, .. }) => {
                // Like bash: status 2, line counted from the eval's own line, then
                // the offending source line. Redirects still apply (`2>&1`).
                let who = format!("{}: eval", self.diag_name());
                let shift = self.current_line.saturating_sub(1);
                let report = crate::error::syntax_report(&who, &cmd, &message, line.max(1), shift);
                let result = ExecResult::err(report, 2);
                return self.redirect_result(result, redirects).await;
            }
            Err(e) => return Err(e),
        };

        // Set up pipeline stdin if provided
        let prev_pipeline_stdin = self.pipeline_stdin.take();
        if stdin.is_some() {
            self.pipeline_stdin = stdin;
        }

        // eval runs in the current shell: use execute_script_body (like source),
        // NOT execute(), so it does not fire the EXIT trap. execute() runs the
        // EXIT trap, which is wrong for eval and — because the top-level EXIT
        // trap has no re-entrancy guard — lets `trap 'eval :' EXIT` recurse one
        // command per level until the budget aborts, risking stack overflow.
        // Like bash, the eval'd text counts lines from the eval's own line
        // (`$LINENO`, diagnostics), not from 1.
        let saved_line_base = std::mem::replace(
            &mut self.line_base,
            isize::try_from(self.current_line.saturating_sub(1)).unwrap_or(0),
        );
        let tempenv_pushed = self.push_pending_tempenv(false);
        self.xtrace_depth += 1;
        let region = self.enter_output_region(redirects);
        let result = self.execute_script_body(&script, false, true).await;
        if tempenv_pushed {
            self.tempenv_frames.pop();
        }
        self.leave_output_region(region);
        self.xtrace_depth -= 1;
        self.line_base = saved_line_base;
        let mut result = result?;
        Self::end_abort_at_boundary(&mut result);

        self.pipeline_stdin = prev_pipeline_stdin;

        result = self.apply_redirections(result, redirects).await?;
        Ok(result)
    }

    /// Parse embedded script text (`eval`, `source`) with full parser defenses.
    async fn parse_embedded_script(&self, input: &str) -> Result<Script> {
        if input.len() > self.limits.max_input_bytes {
            return Err(crate::error::Error::ResourceLimit(
                crate::limits::LimitExceeded::InputTooLarge(
                    input.len(),
                    self.limits.max_input_bytes,
                ),
            ));
        }
        self.execution_budget.consume_input(input.len())?;

        #[cfg(target_family = "wasm")]
        {
            self.parse_shell_text(input)
        }

        #[cfg(not(target_family = "wasm"))]
        {
            let input_owned = input.to_owned();
            let max_depth = self.limits.max_ast_depth;
            let max_ops = self.limits.max_parser_operations;
            let timeout = self.limits.parser_timeout;
            let execution_budget = self.execution_budget.clone();
            let options = self.parse_options();

            let parse_result = tokio::time::timeout(timeout, async move {
                tokio::task::spawn_blocking(move || {
                    let parser = Parser::with_limits(&input_owned, max_depth, max_ops)
                        .with_execution_budget(execution_budget)
                        .with_options(options);
                    parser.parse()
                })
                .await
            })
            .await;

            match parse_result {
                Ok(Ok(result)) => result,
                Ok(Err(join_error)) => Err(crate::error::Error::parse(format!(
                    "parser task failed: {}",
                    join_error
                ))),
                Err(_) => Err(crate::error::Error::ResourceLimit(
                    crate::limits::LimitExceeded::ParserTimeout(timeout),
                )),
            }
        }
    }

    /// Shell state that changes how text parses: the alias table (when
    /// `expand_aliases` is on) and `extglob`.
    pub(crate) fn parse_options(&self) -> crate::parser::ParseOptions {
        crate::parser::ParseOptions {
            aliases: (self.is_expand_aliases_enabled() && !self.scoped.aliases.is_empty())
                .then(|| self.scoped.aliases.clone()),
            extglob: self.is_extglob(),
        }
    }

    /// Check if expand_aliases is enabled via shopt.
    fn is_expand_aliases_enabled(&self) -> bool {
        self.scoped
            .variables
            .get("SHOPT_expand_aliases")
            .map(|v| v == "1")
            .unwrap_or(false)
    }

    fn shadow_local_array_bindings(&mut self, name: &str, keep_indexed: bool, keep_assoc: bool) {
        // A newly retained snapshot keeps the removed binding's entries charged
        // (released at frame pop). When no new snapshot is retained — a second
        // shadow of the same name in the same frame keeps the first snapshot —
        // the binding being removed is a transient local that is not retained
        // anywhere, so its entries must be released now to avoid budget drift.
        let retained_indexed = self.remember_local_array_binding(name);
        let retained_assoc = self.remember_local_assoc_array_binding(name);
        if !keep_indexed {
            let removed = self
                .arrays_mut()
                .remove(name)
                .map_or((0, 0), |arr| (arr.len(), Self::indexed_array_bytes(&arr)));
            if !retained_indexed {
                self.memory_budget.record_array_remove(removed.0);
                self.memory_budget.release_array_bytes(removed.1);
            }
        }
        if !keep_assoc {
            let removed = self
                .assoc_arrays_mut()
                .remove(name)
                .map_or((0, 0), |arr| (arr.len(), Self::assoc_array_bytes(&arr)));
            if !retained_assoc {
                self.memory_budget.record_array_remove(removed.0);
                self.memory_budget.release_array_bytes(removed.1);
            }
        }
    }

    async fn execute_function_call(
        &mut self,
        name: &str,
        func_def: &FunctionDef,
        args: Vec<String>,
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // Check function depth limit
        self.counters.push_function(&self.limits)?;

        // `v=x f`: the prefix assignments form a scope just below the frame.
        let tempenv_pushed = self.push_pending_tempenv(true);

        // Push call frame with positional parameters
        self.call_stack.push(CallFrame {
            name: name.to_string(),
            saved_vars: HashMap::new(),
            is_function: true,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: args,
            keeps_arg0: true,
        });

        // Debug stack: FUNCNAME / BASH_SOURCE / BASH_LINENO gain this call.
        // Interpreter-set FUNCNAME entries are metadata and are inserted
        // uncharged. Remember how many there are so that on return we credit
        // back only the *user-added* entries (e.g. `FUNCNAME[7]=x`), which were
        // charged via the normal array-assignment path. Without this, repeated
        // FUNCNAME mutation would leak array budget across calls (over-count).
        self.bash_source_stack.push(SourceFrame {
            file: self
                .scoped
                .function_files
                .get(name)
                .cloned()
                .unwrap_or_default(),
            funcname: name.to_string(),
            call_line: self.current_line,
            is_function: true,
        });
        let funcname_meta_len = self.bash_source_stack.len();
        self.update_bash_source();

        // Forward pipeline stdin to function body
        let prev_pipeline_stdin = self.pipeline_stdin.take();
        self.pipeline_stdin = stdin;

        // `f 3>file`: writes to fd 3 inside the body route to the file.
        let capture_pending_fd = redirection::has_high_fd_file_redirect(redirects);
        if capture_pending_fd {
            if self.pending_fd_capture_depth == 0 {
                self.clear_pending_fd_redirect_state();
            }
            self.pending_fd_capture_depth += 1;
        }

        // Output the call's redirects will route must not stream from the
        // body first (`f > out` printed `out` too), as for compounds.
        let region = self.enter_output_region(redirects);

        // Execute function body. Always restore call state even on error.
        // The body starts outside any loop (bash resets `loop_level`).
        let saved_loop_depth = std::mem::replace(&mut self.loop_depth, 0);
        // Body lines count from the definition, not a calling trap handler.
        let saved_line_base = std::mem::replace(&mut self.line_base, 0);
        let saved_traps = self.enter_function_traps();
        let emit_before = self.output_emit_count;
        self.return_depth += 1;
        // `set -T`: DEBUG also fires as the body starts, at the definition.
        let mut entry_debug = if self.flags.contains(BashFlags::FUNCTRACE) {
            self.current_line = func_def.span.line();
            self.debug_trap_now().await
        } else {
            None
        };
        let mut result = match DebugTrapOutput::exit_result(&mut entry_debug) {
            Some(stop) => Ok(stop),
            None => DebugTrapOutput::prepend_opt(
                entry_debug,
                self.execute_command(&func_def.body).await,
            ),
        };
        if let Ok(r) = &mut result {
            // Still in the function: the handler sees its locals.
            Box::pin(self.run_return_trap(r, emit_before)).await;
        }
        self.return_depth -= 1;
        self.leave_function_traps(saved_traps);
        self.line_base = saved_line_base;
        self.loop_depth = saved_loop_depth;
        self.leave_output_region(region);
        if capture_pending_fd {
            self.pending_fd_capture_depth = self.pending_fd_capture_depth.saturating_sub(1);
            if result.is_err() {
                self.clear_pending_fd_redirect_state();
            }
        }

        // Restore previous pipeline stdin
        self.pipeline_stdin = prev_pipeline_stdin;

        // Interpreter metadata entries are never charged, but a script may
        // have added its own entries to FUNCNAME while inside the function;
        // those were charged, so credit them back as the array is rebuilt to
        // avoid budget drift.
        let funcname_user_entries = self
            .scoped
            .arrays
            .get("FUNCNAME")
            .map_or(0, |a| a.len())
            .saturating_sub(funcname_meta_len);
        if funcname_user_entries > 0 {
            self.memory_budget
                .record_array_remove(funcname_user_entries);
        }

        // Pop call frame, restore local array bindings, function counter, and
        // the debug stack (BASH_SOURCE / BASH_LINENO / FUNCNAME).
        self.pop_call_frame();
        self.counters.pop_function();
        self.bash_source_stack.pop();
        self.update_bash_source();
        if tempenv_pushed {
            self.tempenv_frames.pop();
        }

        let mut result = result?;

        // Handle return - convert Return control flow to exit code
        if let ControlFlow::Return(code) = result.control_flow {
            result.exit_code = code;
            result.control_flow = ControlFlow::None;
        }

        // Clear errexit_suppressed at function boundary: AND/OR suppression
        // from inside the function must not prevent the caller's set -e from
        // firing on the function's non-zero exit code.
        result.errexit_suppressed = false;
        self.apply_redirections(result, redirects).await
    }

    /// Execute the `let` builtin — evaluate arithmetic expressions.
    async fn execute_let_builtin(
        &mut self,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        if args.is_empty() {
            let result = ExecResult::err(self.diag("let: expression expected\n"), 1);
            return self.redirect_result(result, redirects).await;
        }
        let mut last_val = 0i64;
        for arg in args {
            match self.try_evaluate_arithmetic_with_assign(arg) {
                Ok(v) => last_val = v,
                Err(_) if self.has_arith_unbound() => {
                    let msg = self.take_arith_unbound().unwrap_or_default();
                    return Ok(self.expansion_error_result(msg));
                }
                // An error stops `let` at that expression with status 1.
                Err(msg) => {
                    let result = ExecResult::err(self.arith_diag("let: ", &msg), 1);
                    return self.redirect_result(result, redirects).await;
                }
            }
        }
        let exit_code = if last_val == 0 { 1 } else { 0 };
        let result = ExecResult {
            exit_code,
            ..Default::default()
        };
        self.apply_redirections(result, redirects).await
    }

    /// Execute the `unset` builtin — remove variables, array elements, and namerefs.
    async fn execute_unset_builtin(
        &mut self,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        // Options come first (clusters like `-fn`, `--` ends them); the
        // first operand ends option parsing (`unset x -n` unsets `-n`).
        let mut unset_nameref = false;
        let mut unset_function = false;
        let mut unset_var = false;
        let mut operands_start = args.len();
        for (i, arg) in args.iter().enumerate() {
            if arg == "--" {
                operands_start = i + 1;
                break;
            }
            let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
                operands_start = i;
                break;
            };
            for flag in flags.chars() {
                match flag {
                    'n' => unset_nameref = true,
                    'f' => unset_function = true,
                    'v' => unset_var = true,
                    _ => {
                        let result = ExecResult::err(
                            self.diag(format!(
                                "unset: -{flag}: invalid option\nunset: usage: unset [-f] [-v] [-n] [name ...]\n"
                            )),
                            2,
                        );
                        return self.redirect_result(result, redirects).await;
                    }
                }
            }
        }
        if unset_function && unset_var {
            let result = ExecResult::err(
                self.diag("unset: cannot simultaneously unset a function and a variable\n"),
                1,
            );
            return self.redirect_result(result, redirects).await;
        }
        let var_args: Vec<&String> = args[operands_start..].iter().collect();

        let mut stderr = String::new();
        let mut exit_code: i32 = 0;

        for arg in &var_args {
            if unset_function {
                self.remove_function(arg.as_str());
                continue;
            }
            // Only an explicit `-v` checks the name (bash).
            if unset_var && !is_valid_var_name(arg) && !Self::is_array_reference(arg) {
                stderr.push_str(&self.diag(format!("unset: `{arg}': not a valid identifier\n")));
                exit_code = 1;
                continue;
            }
            if let Some(bracket) = arg.find('[')
                && arg.ends_with(']')
            {
                let arr_name = &arg[..bracket];
                let key = &arg[bracket + 1..arg.len() - 1];
                let resolved_name = self.resolve_nameref(arr_name).to_string();
                // `unset 'm["$k"]'`: an assoc key is word-expanded (quotes
                // removed); an indexed one is arithmetic (`a[i-1]`, `a[-1]`).
                let expanded_key = if self.scoped.assoc_arrays.contains_key(&resolved_name) {
                    Box::pin(self.expand_raw_assoc_key(key)).await?
                } else {
                    self.expand_variable_or_literal(key)
                };
                if self.is_var_readonly(&resolved_name) {
                    stderr.push_str(&self.diag(format!(
                        "unset: {resolved_name}: cannot unset: readonly variable\n"
                    )));
                    exit_code = 1;
                    continue;
                }
                // THREAT[TM-DOS-114]: releasing one element must give back both
                // its entry slot and its bytes, or repeated set/unset cycles
                // drift the budget until a healthy script is refused.
                let released = if let Some(arr) = self.assoc_arrays_mut().get_mut(&resolved_name) {
                    arr.remove(&expanded_key)
                        .map(|value| expanded_key.len() + value.len())
                } else if self.scoped.arrays.contains_key(&resolved_name) {
                    let raw = self.evaluate_arithmetic(key);
                    let top = self
                        .scoped
                        .arrays
                        .get(&resolved_name)
                        .and_then(|a| a.keys().max().map(|m| *m as i128 + 1))
                        .unwrap_or(0);
                    if raw < 0 && top + i128::from(raw) < 0 {
                        // bash: `unset 'a[-9]'` past the start fails.
                        stderr
                            .push_str(&self.diag(format!("unset: [{key}]: bad array subscript\n")));
                        exit_code = 1;
                        continue;
                    }
                    let idx = if raw < 0 {
                        (top + i128::from(raw)) as usize
                    } else {
                        raw as usize
                    };
                    self.arrays_mut()
                        .get_mut(&resolved_name)
                        .and_then(|arr| arr.remove(&idx))
                        .map(|value| value.len())
                } else {
                    None
                };
                if let Some(bytes) = released {
                    self.memory_budget.record_array_remove(1);
                    self.memory_budget.release_array_bytes(bytes);
                }
                continue;
            }
            if unset_nameref && self.scoped.namerefs.contains_key(arg.as_str()) {
                self.remove_nameref(arg);
            } else {
                // `-n` on a plain variable unsets it without following
                // namerefs.
                let resolved = if unset_nameref {
                    arg.to_string()
                } else {
                    self.resolve_nameref(arg).to_string()
                };
                // THREAT[TM-INJ-009]: Block unset of internal marker variables
                if is_internal_variable(&resolved) {
                    stderr.push_str(&self.diag(format!(
                        "unset: {resolved}: cannot unset: readonly variable\n"
                    )));
                    exit_code = 1;
                    continue;
                }
                // THREAT[TM-INJ-019]: Refuse to unset readonly variables and surface
                // the error so callers cannot mistake a silent skip for success.
                if self.is_var_readonly(&resolved) {
                    stderr.push_str(&self.diag(format!(
                        "unset: {resolved}: cannot unset: readonly variable\n"
                    )));
                    exit_code = 1;
                    continue;
                }
                if resolved == "LINENO" {
                    self.lineno_unset = true;
                }
                if resolved == "PWD" {
                    self.pwd_shadow = Some(self.cwd.clone());
                }
                // Without -v, a name that is no variable unsets the function.
                if !unset_var
                    && !unset_nameref
                    && !self.is_variable_set(&resolved)
                    && !self.scoped.arrays.contains_key(&resolved)
                    && !self.scoped.assoc_arrays.contains_key(&resolved)
                    && self.scoped.functions.contains_key(&resolved)
                {
                    self.remove_function(&resolved);
                    continue;
                }
                self.unset_variable(&resolved);
            }
        }
        let result = ExecResult {
            stderr: stderr.into(),
            exit_code,
            ..Default::default()
        };
        self.apply_redirections(result, redirects).await
    }

    /// `name[subscript]` with a valid name (`unset -v 'a[1]'`).
    fn is_array_reference(arg: &str) -> bool {
        arg.find('[')
            .is_some_and(|b| b > 0 && arg.ends_with(']') && is_valid_var_name(&arg[..b]))
    }

    /// Remove every live binding of `name`: scalar value, arrays,
    /// attributes, nameref and env entry.
    fn clear_live_binding(&mut self, name: &str) {
        self.remove_scalar_value(name);
        self.env_mut().remove(name);
        // THREAT[TM-DOS-114]: `unset arr` must return the array's entry
        // slots and bytes to the budget. Without this a set/unset cycle
        // drifts until a healthy script is refused.
        self.remove_indexed_array(name);
        let released_assoc = self
            .assoc_arrays_mut()
            .remove(name)
            .map_or((0, 0), |arr| (arr.len(), Self::assoc_array_bytes(&arr)));
        self.memory_budget.record_array_remove(released_assoc.0);
        self.memory_budget.release_array_bytes(released_assoc.1);
        self.clear_var_attrs(name);
        self.remove_nameref(name);
    }

    /// `unset name` (bash semantics). A local of the current function stays
    /// local but unset. A local of a calling function is popped instead, so
    /// the binding it shadowed becomes visible again.
    /// Push the dispatched command's prefix assignments (`v=x f`,
    /// `v=x eval ...`) as a temp-env scope at the current call depth.
    fn push_pending_tempenv(&mut self, function: bool) -> bool {
        let Some(saves) = self.pending_tempenv.take() else {
            return false;
        };
        let mut map = HashMap::new();
        for (k, v) in saves {
            map.entry(k).or_insert(v);
        }
        self.tempenv_frames
            .push((self.call_stack.len(), map, function));
        true
    }

    /// The temp-env scope holding the visible binding of `name`, if no
    /// `local` sits above it.
    fn visible_tempenv(&self, name: &str) -> Option<usize> {
        let owner = self
            .call_stack
            .iter()
            .rposition(|f| f.saved_vars.contains_key(name));
        let t = self
            .tempenv_frames
            .iter()
            .rposition(|(_, m, _)| m.contains_key(name))?;
        owner
            .is_none_or(|o| self.tempenv_frames[t].0 > o)
            .then_some(t)
    }

    fn unset_variable(&mut self, name: &str) {
        let owner = self
            .call_stack
            .iter()
            .rposition(|f| f.saved_vars.contains_key(name));
        // A temp-env binding (`v=x f`) above every local: drop it and show
        // the value it replaced (bash's dynamic unset).
        if let Some(t) = self.visible_tempenv(name) {
            let saved = self.tempenv_frames[t].1.remove(name).flatten();
            match saved {
                Some(v) => {
                    self.insert_variable_checked(name.to_string(), v);
                }
                None => {
                    self.remove_scalar_value(name);
                }
            }
            self.env_mut().remove(name);
            return;
        }
        let current = self.local_frame_index();
        if let Some(idx) = owner
            && Some(idx) != current
        {
            let frame = &mut self.call_stack[idx];
            let saved = frame.saved_vars.remove(name).unwrap_or_default();
            let indexed = frame.local_arrays.remove(name);
            let assoc = frame.local_assoc_arrays.remove(name);
            self.restore_saved_var(name, saved);
            match indexed {
                Some(prev) => self.restore_array_binding(name, prev),
                None => self.restore_array_binding(name, None),
            }
            match assoc {
                Some(prev) => self.restore_assoc_array_binding(name, prev),
                None => self.restore_assoc_array_binding(name, None),
            }
            return;
        }
        self.clear_live_binding(name);
    }

    /// `getopts` unsets OPTARG for options without one. Locals use shallow
    /// binding, so dropping the live value leaves a `local OPTARG`'s caller
    /// value saved in the frame, untouched.
    fn unset_optarg(&mut self) {
        self.remove_scalar_value("OPTARG");
    }

    /// Usage: `getopts optstring name [args...]`
    ///
    /// Parses options from positional params (or `args`).
    /// Uses/updates `OPTIND` variable for tracking position.
    /// Sets `name` variable to the found option letter.
    /// Sets `OPTARG` for options that take arguments (marked with `:` in optstring).
    /// Returns 0 while options remain, 1 when done.
    /// `getopts optstring name [args]`. An invalid `name` still advances
    /// OPTIND/OPTARG, as in bash, but fails with status 1.
    async fn execute_getopts(
        &mut self,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let bad_name = args.get(1).filter(|n| !is_valid_var_name(n)).cloned();
        let mut result = Box::pin(self.execute_getopts_inner(args, redirects)).await?;
        if let Some(name) = bad_name
            && result.exit_code != 2
        {
            let msg = self.diag(format!("getopts: `{name}': not a valid identifier\n"));
            let err = self
                .redirect_result(ExecResult::err(msg, 1), redirects)
                .await?;
            result.stderr.append(&err.stderr);
            result.stdout.append(&err.stdout);
            result.exit_code = 1;
        }
        Ok(result)
    }

    /// Assign getopts' option variable unless its name is invalid.
    fn set_getopts_name(&mut self, name: &str, value: String) {
        if is_valid_var_name(name) {
            self.set_variable(name.to_string(), value);
        }
    }

    async fn execute_getopts_inner(
        &mut self,
        args: &[String],
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        if args.len() < 2 {
            let result = ExecResult::err("getopts: usage: getopts optstring name [arg ...]\n", 2);
            return self.redirect_result(result, redirects).await;
        }

        let optstring = &args[0];
        let varname = &args[1];

        // Get the arguments to parse (remaining args, or positional params)
        let parse_args: Vec<String> = if args.len() > 2 {
            args[2..].to_vec()
        } else {
            // Use positional parameters $1, $2, ...
            self.call_stack
                .last()
                .map(|frame| frame.positional.clone())
                .unwrap_or_default()
        };

        // Get current OPTIND (1-based index into args)
        // OPTIND and OPTARG follow dynamic scope (`local OPTIND` in a
        // function); an empty or unset OPTIND starts over at 1.
        let optind: usize = self.expand_variable("OPTIND").parse().unwrap_or(1);

        // Check if we're past the end (bash leaves OPTIND just past the
        // last argument, and OPTARG unset).
        if optind < 1 || optind > parse_args.len() {
            self.unset_optarg();
            self.set_getopts_name(varname, "?".to_string());
            self.set_variable(
                "OPTIND".to_string(),
                optind.clamp(1, parse_args.len() + 1).to_string(),
            );
            return Ok(ExecResult {
                stdout: crate::StreamData::new(),
                stderr: crate::StreamData::new(),
                exit_code: 1,
                control_flow: crate::interpreter::ControlFlow::None,
                ..Default::default()
            });
        }

        let current_arg = &parse_args[optind - 1];

        // Check if this is an option (starts with -)
        if !current_arg.starts_with('-') || current_arg == "-" || current_arg == "--" {
            self.unset_optarg();
            self.set_getopts_name(varname, "?".to_string());
            // OPTIND stays on the first operand (past a `--`), and getopts
            // writes it back even when it was unset.
            let next = if current_arg == "--" {
                optind + 1
            } else {
                optind
            };
            self.set_variable("OPTIND".to_string(), next.to_string());
            return Ok(ExecResult {
                stdout: crate::StreamData::new(),
                stderr: crate::StreamData::new(),
                exit_code: 1,
                control_flow: crate::interpreter::ControlFlow::None,
                ..Default::default()
            });
        }

        // Parse the option character(s) from current arg
        // Handle multi-char option groups like -abc
        let opt_chars: Vec<char> = current_arg[1..].chars().collect();

        // Track position within the current argument for multi-char options
        let char_idx: usize = self.getopts_char_idx;

        if char_idx >= opt_chars.len() {
            // Should not happen, but advance
            self.set_variable("OPTIND".to_string(), (optind + 1).to_string());
            self.getopts_char_idx = 0;
            self.set_getopts_name(varname, "?".to_string());
            return Ok(ExecResult {
                stdout: crate::StreamData::new(),
                stderr: crate::StreamData::new(),
                exit_code: 1,
                control_flow: crate::interpreter::ControlFlow::None,
                ..Default::default()
            });
        }

        let opt_char = opt_chars[char_idx];
        let silent = optstring.starts_with(':');
        let spec = if silent { &optstring[1..] } else { optstring };

        // Check if this option is in the optstring
        if let Some(pos) = spec.find(opt_char) {
            let needs_arg = spec.get(pos + 1..pos + 2) == Some(":");
            self.set_getopts_name(varname, opt_char.to_string());

            if needs_arg {
                // Option needs an argument
                if char_idx + 1 < opt_chars.len() {
                    // Rest of current arg is the argument
                    let arg_val: String = opt_chars[char_idx + 1..].iter().collect();
                    self.set_variable("OPTARG".to_string(), arg_val);
                    self.set_variable("OPTIND".to_string(), (optind + 1).to_string());
                    self.getopts_char_idx = 0;
                } else if optind < parse_args.len() {
                    // Next arg is the argument
                    self.set_variable("OPTARG".to_string(), parse_args[optind].clone());
                    self.set_variable("OPTIND".to_string(), (optind + 2).to_string());
                    self.getopts_char_idx = 0;
                } else {
                    // Missing argument
                    self.unset_optarg();
                    self.set_variable("OPTIND".to_string(), (optind + 1).to_string());
                    self.getopts_char_idx = 0;
                    if silent {
                        self.set_getopts_name(varname, ":".to_string());
                        self.set_variable("OPTARG".to_string(), opt_char.to_string());
                    } else {
                        self.set_getopts_name(varname, "?".to_string());
                        let mut result = ExecResult::ok(String::new());
                        result.stderr = self
                            .diag(format!(
                                "getopts: option requires an argument -- '{opt_char}'\n"
                            ))
                            .into();
                        result = self.apply_redirections(result, redirects).await?;
                        return Ok(result);
                    }
                }
            } else {
                // No argument needed
                self.unset_optarg();
                if char_idx + 1 < opt_chars.len() {
                    // More chars in this arg: OPTIND stays on it, as in bash.
                    self.set_variable("OPTIND".to_string(), optind.to_string());
                    self.getopts_char_idx = char_idx + 1;
                } else {
                    // Move to next arg
                    self.set_variable("OPTIND".to_string(), (optind + 1).to_string());
                    self.getopts_char_idx = 0;
                }
            }
        } else {
            // Unknown option
            self.unset_optarg();
            if char_idx + 1 < opt_chars.len() {
                self.set_variable("OPTIND".to_string(), optind.to_string());
                self.getopts_char_idx = char_idx + 1;
            } else {
                self.set_variable("OPTIND".to_string(), (optind + 1).to_string());
                self.getopts_char_idx = 0;
            }

            if silent {
                self.set_getopts_name(varname, "?".to_string());
                self.set_variable("OPTARG".to_string(), opt_char.to_string());
            } else {
                self.set_getopts_name(varname, "?".to_string());
                let mut result = ExecResult::ok(String::new());
                result.stderr = self
                    .diag(format!("getopts: illegal option -- '{opt_char}'\n"))
                    .into();
                result = self.apply_redirections(result, redirects).await?;
                return Ok(result);
            }
        }

        let mut result = ExecResult::ok(String::new());
        result = self.apply_redirections(result, redirects).await?;
        Ok(result)
    }

    /// `builtin NAME [ARGS]`: run a shell builtin, bypassing functions.
    async fn execute_builtin_builtin(
        &mut self,
        args: &[String],
        stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let args = match args.first().map(String::as_str) {
            Some("--") => &args[1..],
            _ => args,
        };
        let Some(name) = args.first() else {
            return Ok(ExecResult::ok(String::new()));
        };
        let registered = Self::is_special_builtin_name(name)
            || self.builtins.contains_key(name.as_str())
            || self.has_host_builtin(name);
        // Same rule as `type`/`command -v`: a registered command that real
        // bash runs from PATH (`cat`, `ls`) is a file, not a shell builtin,
        // when the root filesystem provides it.
        let is_shell_builtin = registered
            && (Self::is_special_builtin_name(name)
                || builtins::BASH_BUILTIN_NAMES.contains(&name.as_str())
                || self.resolve_command_path(name).await.is_none());
        if !is_shell_builtin {
            let result = ExecResult::err(
                self.diag(format!("builtin: {name}: not a shell builtin\n")),
                1,
            );
            return self.redirect_result(result, redirects).await;
        }
        // `command NAME` already runs the builtin and skips functions; a
        // leading `--` keeps a `-v`-named builtin from becoming a flag.
        let mut command_args = Vec::with_capacity(args.len() + 1);
        command_args.push("--".to_string());
        command_args.extend(args.iter().cloned());
        Box::pin(self.execute_command_builtin(&command_args, stdin, redirects)).await
    }

    /// Execute the `command` builtin.
    ///
    /// - `command -v name` — print command path/name if found (exit 0) or nothing (exit 1)
    /// - `command -V name` — verbose: describe what `name` is
    /// - `command name args...` — run `name` bypassing shell functions
    async fn execute_command_builtin(
        &mut self,
        args: &[String],
        _stdin: Option<crate::StreamData>,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        if args.is_empty() {
            return Ok(ExecResult::ok(String::new()));
        }

        let mut mode = ' '; // default: run the command
        // Stays past the end when only flags were given (`command -v`).
        let mut cmd_args_start = args.len();

        // Parse flags
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            if arg == "-v" {
                mode = 'v';
                i += 1;
            } else if arg == "-V" {
                mode = 'V';
                i += 1;
            } else if arg == "-p" {
                // -p: use default PATH (ignore in sandboxed env)
                i += 1;
            } else if arg == "--" {
                cmd_args_start = i + 1;
                break;
            } else {
                cmd_args_start = i;
                break;
            }
        }

        if cmd_args_start >= args.len() {
            return Ok(ExecResult::ok(String::new()));
        }

        let cmd_name = &args[cmd_args_start];

        match mode {
            'v' => {
                // command -v: print the name/path of each known command;
                // status 0 when any was found (bash).
                let mut out = String::new();
                for cmd_name in &args[cmd_args_start..] {
                    let registered = self.builtins.contains_key(cmd_name.as_str())
                        || is_dispatch_only_builtin(cmd_name)
                        || self.has_host_builtin(cmd_name);
                    let found = if self.scoped.functions.contains_key(cmd_name.as_str())
                        || is_keyword(cmd_name)
                        || (registered && builtins::BASH_BUILTIN_NAMES.contains(&cmd_name.as_str()))
                    {
                        Some(cmd_name.to_string())
                    } else if let Some(path) = self.resolve_command_path(cmd_name).await {
                        Some(path)
                    } else {
                        registered.then(|| cmd_name.to_string())
                    };
                    if let Some(name) = found {
                        out.push_str(&name);
                        out.push('\n');
                    }
                }
                let code = if out.is_empty() { 1 } else { 0 };
                let mut result = ExecResult::with_code(out, code);
                result = self.apply_redirections(result, redirects).await?;
                Ok(result)
            }
            'V' => {
                // command -V: verbose description
                let registered = self.has_host_builtin(cmd_name)
                    || is_dispatch_only_builtin(cmd_name)
                    || self.builtins.contains_key(cmd_name.as_str());
                let path =
                    if registered && builtins::BASH_BUILTIN_NAMES.contains(&cmd_name.as_str()) {
                        None
                    } else {
                        self.resolve_command_path(cmd_name).await
                    };
                let alias = self
                    .is_expand_aliases_enabled()
                    .then(|| self.scoped.aliases.get(cmd_name.as_str()))
                    .flatten();
                let description = if let Some(value) = alias {
                    format!("{cmd_name} is aliased to `{value}'\n")
                } else if let Some(f) = self.scoped.functions.get(cmd_name.as_str()) {
                    format!(
                        "{cmd_name} is a function\n{}\n",
                        crate::parser::function_string(cmd_name, &f.body)
                    )
                } else if is_keyword(cmd_name) {
                    format!("{} is a shell keyword\n", cmd_name)
                } else if let Some(path) = path {
                    format!("{} is {}\n", cmd_name, path)
                } else if registered {
                    format!("{} is a shell builtin\n", cmd_name)
                } else {
                    let result =
                        ExecResult::err(self.diag(format!("command: {cmd_name}: not found\n")), 1);
                    return self.apply_redirections(result, redirects).await;
                };
                let mut result = ExecResult::ok(description);
                result = self.apply_redirections(result, redirects).await?;
                Ok(result)
            }
            _ => {
                // command name args...: run bypassing functions (use builtin only)
                // Build a synthetic simple command and execute it, skipping function lookup
                let remaining = &args[cmd_args_start..];
                let target = remaining[0].as_str();
                let builtin_args = &remaining[1..];
                // Interpreter-native (special) builtins like `eval`, `source`,
                // `.`, `declare` are implemented in the interpreter, not as
                // trait builtins — some are only registered as unreachable
                // stubs. Route them through the special dispatch so
                // `command eval echo ok` behaves like `eval echo ok` rather
                // than hitting a stub. `command` already bypasses functions,
                // and specials outrank functions in normal dispatch anyway.
                if self.routes_to_interpreter(target, builtin_args) {
                    // Box::pin: this can recurse (e.g. `command command eval ...`).
                    return Box::pin(self.execute_special_builtin_with_hooks(
                        target,
                        builtin_args,
                        _stdin,
                        redirects,
                    ))
                    .await;
                }
                // Resolve host-registered builtins first (same precedence as dispatch_command).
                if let Some(builtin) = self
                    .host_builtins
                    .as_ref()
                    .and_then(|reg| reg.lookup_entry(target))
                {
                    return self
                        .execute_host_builtin(
                            target,
                            builtin,
                            builtin_args,
                            _stdin.as_ref(),
                            redirects,
                        )
                        .await;
                }
                if let Some(builtin) = self.builtins.get(target).cloned() {
                    return self
                        .execute_builtin_arc(
                            target,
                            builtin,
                            crate::builtins::BuiltinAccess::Scoped,
                            builtin_args,
                            _stdin.as_ref(),
                            redirects,
                        )
                        .await;
                }
                // `command ./script` / `command name-on-PATH`: run the file,
                // like a plain command would.
                if self.shell_features.has_script_execution() {
                    let builtin_args = builtin_args.to_vec();
                    if target.contains('/') {
                        return self
                            .try_execute_script_by_path(target, &builtin_args, _stdin, redirects)
                            .await;
                    }
                    if let Some(result) = self
                        .try_execute_script_via_path_search(
                            target,
                            &builtin_args,
                            _stdin,
                            redirects,
                        )
                        .await?
                    {
                        return Ok(result);
                    }
                }
                let result = ExecResult::err(
                    self.diag(format!("{}: command not found\n", remaining[0])),
                    127,
                );
                self.redirect_result(result, redirects).await
            }
        }
    }

    /// Execute an [`ExecutionPlan`] returned by a builtin's `execution_plan()` method.
    ///
    /// This is the interpreter hook that fulfills sub-command execution requests
    /// from builtins like `timeout`, `xargs`, and `find -exec`.
    fn execute_builtin_plan<'a>(
        &'a mut self,
        plan: builtins::ExecutionPlan,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            // Output a redirect routes must not stream first
            // (`env sh -c ... >&2`, `make 2>&1`, `find -exec ... > out`).
            let region = self.enter_output_region(redirects);
            let result = self.execute_builtin_plan_inner(plan, redirects).await;
            self.leave_output_region(region);
            result
        })
    }

    async fn execute_builtin_plan_inner(
        &mut self,
        plan: builtins::ExecutionPlan,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        let result = match plan {
            builtins::ExecutionPlan::Timeout {
                duration,
                preserve_status,
                command,
            } => {
                // Build inner command with optional stdin via here-string.
                let inner_cmd = subcommand_to_command(&command);

                {
                    let baseline_call_stack_len = self.call_stack.len();
                    let baseline_bash_source_len = self.bash_source_stack.len();
                    let baseline_function_depth = self.counters.function_depth;
                    let baseline_pipeline_stdin = self.pipeline_stdin.clone();
                    self.pipeline_stdin = command.stdin.clone();
                    let exec_future = self.execute_command(&inner_cmd);
                    match crate::time_compat::timeout(duration, exec_future).await {
                        Ok(Ok(result)) => {
                            self.pipeline_stdin = baseline_pipeline_stdin;
                            result
                        }
                        Ok(Err(e)) => {
                            self.pipeline_stdin = baseline_pipeline_stdin;
                            return Err(e);
                        }
                        Err(_) => {
                            self.reconcile_cancelled_execution_state(
                                baseline_call_stack_len,
                                baseline_bash_source_len,
                                baseline_function_depth,
                                baseline_pipeline_stdin,
                            );
                            // Timeout expired.
                            // --preserve-status: in real bash, returns the signal+128 status
                            // of the killed child.  We can't capture that from tokio::timeout,
                            // so we always use 124 (the standard timeout exit code).
                            // TODO: propagate child exit status when preserve_status is true
                            let exit_code = if preserve_status { 137 } else { 124 };
                            ExecResult::err(String::new(), exit_code)
                        }
                    }
                }
            }
            builtins::ExecutionPlan::Env {
                command,
                clear,
                unset,
                set,
                chdir,
            } => Box::pin(self.execute_env_plan(command, clear, unset, set, chdir)).await?,
            builtins::ExecutionPlan::Driver(mut driver) => {
                let mut last = None;
                let result = loop {
                    let step = match driver.next(last.take()).await {
                        Ok(step) => step,
                        Err(e) => break Err(e),
                    };
                    match step {
                        step @ (builtins::PlanStep::Run { .. }
                        | builtins::PlanStep::Capture { .. }) => {
                            let (command, cwd, capture) = match step {
                                builtins::PlanStep::Run { command, cwd } => (command, cwd, false),
                                builtins::PlanStep::Capture { command, cwd } => {
                                    (command, cwd, true)
                                }
                                _ => unreachable!(),
                            };
                            let inner_cmd = subcommand_to_command(&command);
                            let saved_stdin = self.pipeline_stdin.take();
                            self.pipeline_stdin = command.stdin;
                            let saved_cwd = cwd.map(|dir| std::mem::replace(&mut self.cwd, dir));
                            // Captured output goes to the driver only.
                            let saved_callback = if capture {
                                self.output_callback.take()
                            } else {
                                None
                            };
                            let emit_before = self.output_emit_count;
                            let result = self.execute_command(&inner_cmd).await;
                            if saved_callback.is_some() {
                                self.output_callback = saved_callback;
                            } else if let Ok(r) = &result {
                                // A command that did not stream its own
                                // output (`xargs -t echo`) streams it now,
                                // after the driver's earlier `Emit`s.
                                self.maybe_emit_output(&r.stdout, &r.stderr, emit_before)
                                    .await?;
                            }
                            if let Some(dir) = saved_cwd {
                                self.cwd = dir;
                            }
                            self.pipeline_stdin = saved_stdin;
                            match result {
                                Ok(r) => last = Some(r),
                                Err(e) => break Err(e),
                            }
                        }
                        builtins::PlanStep::Emit { stdout, stderr } => {
                            let before = self.output_emit_count;
                            self.maybe_emit_output(&stdout, &stderr, before).await?;
                        }
                        builtins::PlanStep::Done(result) => break Ok(result),
                    }
                };
                result?
            }
            builtins::ExecutionPlan::Batch { commands } => {
                let mut combined_stdout = crate::StreamData::new();
                let mut combined_stderr = crate::StreamData::new();
                let mut last_exit_code = 0;

                for cmd in commands {
                    let inner_cmd = subcommand_to_command(&cmd);
                    let saved_stdin = self.pipeline_stdin.take();
                    self.pipeline_stdin = cmd.stdin;
                    let result = self.execute_command(&inner_cmd).await;
                    self.pipeline_stdin = saved_stdin;
                    let result = result?;
                    combined_stdout.append(&result.stdout);
                    combined_stderr.append(&result.stderr);
                    last_exit_code = result.exit_code;
                }

                ExecResult {
                    stdout: combined_stdout,
                    stderr: combined_stderr,
                    exit_code: last_exit_code,
                    control_flow: ControlFlow::None,
                    ..Default::default()
                }
            }
            builtins::ExecutionPlan::BatchWithStatus {
                commands,
                stderr_prefix,
                force_error_exit,
            } => {
                let mut combined_stdout = crate::StreamData::new();
                let mut combined_stderr: crate::StreamData = stderr_prefix.into();
                let mut last_exit_code = 0;

                for cmd in commands {
                    let inner_cmd = subcommand_to_command(&cmd);
                    let saved_stdin = self.pipeline_stdin.take();
                    self.pipeline_stdin = cmd.stdin;
                    let result = self.execute_command(&inner_cmd).await;
                    self.pipeline_stdin = saved_stdin;
                    let result = result?;
                    combined_stdout.append(&result.stdout);
                    combined_stderr.append(&result.stderr);
                    last_exit_code = result.exit_code;
                }

                let exit_code = if force_error_exit && last_exit_code == 0 {
                    1
                } else {
                    last_exit_code
                };

                ExecResult {
                    stdout: combined_stdout,
                    stderr: combined_stderr,
                    exit_code,
                    control_flow: ControlFlow::None,
                    ..Default::default()
                }
            }
        };

        self.apply_redirections(result, redirects).await
    }

    /// `env [-i] [-u NAME] [-C DIR] [NAME=VALUE]... CMD`: run CMD like a
    /// child process. Shell state is snapshotted and restored, so neither the
    /// environment edits nor anything CMD does leaks back to the caller.
    async fn execute_env_plan(
        &mut self,
        command: builtins::SubCommand,
        clear: bool,
        unset: Vec<String>,
        set: Vec<(String, String)>,
        chdir: Option<String>,
    ) -> Result<ExecResult> {
        let snapshot = self.snapshot_subshell_state();
        let saved_env = self.env.clone();
        let saved_stdin = self.pipeline_stdin.take();
        if clear {
            // A child started with an empty environment sees no shell
            // variables at all; internal option markers stay.
            self.vars_mut().retain(|name, _| is_internal_variable(name));
            self.env_mut().clear();
        }
        for name in unset {
            self.env_mut().remove(&name);
            self.vars_mut().remove(&name);
        }
        for (name, value) in set {
            if is_internal_variable(&name) {
                continue;
            }
            self.env_mut().insert(name.clone(), value.clone());
            self.vars_mut().insert(name, value);
        }
        let mut result = Ok(None);
        if let Some(dir) = chdir {
            let path = crate::builtins::resolve_path(&self.cwd, &dir);
            if self
                .fs
                .stat(&path)
                .await
                .is_ok_and(|m| m.file_type.is_dir())
            {
                self.cwd = path;
            } else {
                result = Ok(Some(ExecResult::err(
                    format!("env: cannot change directory to '{dir}': No such file or directory\n"),
                    125,
                )));
            }
        }
        if matches!(result, Ok(None)) && ENV_SHELL_ONLY_BUILTINS.contains(&command.name.as_str()) {
            // No program by this name exists on a real system.
            result = Ok(Some(ExecResult::err(String::new(), 127)));
        } else if matches!(result, Ok(None)) {
            self.pipeline_stdin = command.stdin.clone();
            let inner = subcommand_to_command(&command);
            result = self.execute_command(&inner).await.map(Some);
        }
        self.pipeline_stdin = saved_stdin;
        self.restore_subshell_state(snapshot);
        self.env = saved_env;
        let mut result = result?.unwrap_or_default();
        // A child process can't break, return or exit the calling shell.
        result.control_flow = ControlFlow::None;
        if result.exit_code == 127
            && (result.stderr.is_empty() || result.stderr.contains("command not found"))
        {
            // env execs a program, so a missing command reads like execvp's error.
            result.stderr = format!("env: '{}': No such file or directory\n", command.name).into();
        }
        Ok(result)
    }

    /// Restore interpreter stacks/counters after an in-flight command future is cancelled.
    ///
    /// Host-backed deadlines can cancel a command future mid-flight on native
    /// and JS-host wasm targets, so both paths must restore transient stacks.
    fn reconcile_cancelled_execution_state(
        &mut self,
        baseline_call_stack_len: usize,
        baseline_bash_source_len: usize,
        baseline_function_depth: usize,
        baseline_pipeline_stdin: Option<crate::StreamData>,
    ) {
        let leaked_call_frames = self
            .call_stack
            .len()
            .saturating_sub(baseline_call_stack_len);
        let leaked_bash_source_entries = self
            .bash_source_stack
            .len()
            .saturating_sub(baseline_bash_source_len);

        if leaked_call_frames > 0 {
            self.unwind_call_stack(baseline_call_stack_len);
        }
        if leaked_bash_source_entries > 0 {
            self.bash_source_stack.truncate(baseline_bash_source_len);
            self.update_bash_source();
        }
        // Temp-env scopes of the cancelled calls are gone with them.
        self.tempenv_frames
            .retain(|(depth, _, _)| *depth < baseline_call_stack_len);
        self.pending_tempenv = None;

        // Some cancellable paths push call frames or BASH_SOURCE without pushing function depth.
        self.counters.function_depth = baseline_function_depth;
        self.pipeline_stdin = baseline_pipeline_stdin;

        self.update_bash_source();
    }

    /// Process structured side effects from builtin execution.
    async fn apply_builtin_side_effects(
        &mut self,
        result: &mut ExecResult,
        variables_untouched: bool,
    ) -> Result<()> {
        // Builtins that mutate SHOPT_* directly via `ctx.variables` (e.g. the
        // `set -e` / `set +u` paths in the `set` builtin) don't update the
        // cached `flags` bitfield. Resync after every builtin that may write
        // a variable, so the bit cache can stay authoritative on the hot
        // path. The resync is some fifteen look-ups, so it is skipped after
        // the builtins that write none, the usual body of a hot loop (clix
        // patches, "a builtin's fixed costs" and "a command's fixed costs").
        if !variables_untouched {
            self.refresh_shopt_flags();
            self.sync_dir_exports();
        }
        let effects = std::mem::take(&mut result.side_effects);
        let mut shift_failed = false;
        let mut readonly_failed = false;
        let mut pending_self_signal = None;
        for effect in &effects {
            match effect {
                builtins::BuiltinSideEffect::SetArray { name, elements } => {
                    let mut arr = HashMap::new();
                    // Empty fields are elements too (`IFS=, read -ra a <<< 'a,,b'`).
                    for (i, word) in elements.iter().enumerate() {
                        arr.insert(i, word.clone());
                    }
                    self.insert_array_checked(name.clone(), arr);
                }
                builtins::BuiltinSideEffect::SetIndexedArray { name, entries } => {
                    // Merges into the existing array; mapfile sends RemoveArray
                    // first unless `-O` asked to keep the other elements.
                    // Keep retained storage visible to admission so overwrites
                    // refund their old values and refused writes preserve them.
                    if !entries.is_empty() && self.env.contains_key(name) {
                        self.env_mut().remove(name);
                    }
                    for (idx, value) in entries {
                        self.set_indexed_element_checked(name, *idx, value.clone());
                        self.check_cancelled()?;
                    }
                }
                builtins::BuiltinSideEffect::SignalSelf(signal) => {
                    pending_self_signal = Some(*signal);
                }
                builtins::BuiltinSideEffect::DiscardCommandString => {
                    self.builtin_discard = true;
                }
                builtins::BuiltinSideEffect::RemoveArray(name) => {
                    self.remove_indexed_array(name);
                }
                builtins::BuiltinSideEffect::ShiftPositional(n) => {
                    // bash: a count above `$#` shifts nothing and fails.
                    let len = self.call_stack.last().map_or(0, |f| f.positional.len());
                    if *n > len {
                        shift_failed = true;
                    } else if let Some(frame) = self.call_stack.last_mut() {
                        frame.positional.drain(..*n);
                    }
                }
                builtins::BuiltinSideEffect::SetPositional(new_positional) => {
                    if let Some(frame) = self.call_stack.last_mut() {
                        frame.positional = new_positional.clone();
                    } else {
                        // `set --` at top level must not change `$0`; the
                        // synthetic frame keeps the default shell name.
                        self.call_stack.push(CallFrame {
                            name: Self::DEFAULT_ARG0.to_string(),
                            saved_vars: HashMap::new(),
                            is_function: false,
                            local_arrays: HashMap::new(),
                            local_assoc_arrays: HashMap::new(),
                            positional: new_positional.clone(),
                            keeps_arg0: false,
                        });
                    }
                }
                builtins::BuiltinSideEffect::ClearHistory => {
                    self.clear_history();
                    // Persist immediately so `history -c` is a same-exec sanitization boundary.
                    self.save_history().await;
                }
                builtins::BuiltinSideEffect::SetLastExitCode(code) => {
                    self.last_exit_code = *code;
                }
                builtins::BuiltinSideEffect::SetVariable { name, value } => {
                    if readonly_failed {
                        continue;
                    }
                    // A builtin (read, getopts, ...) assigning through a
                    // circular nameref fails that command, as in bash,
                    // instead of abandoning the line like an assignment.
                    let Ok(target) = self.resolve_nameref_strict(name) else {
                        result.stderr.push_str(
                            &self.diag(format!("warning: {name}: circular name reference\n")),
                        );
                        result.exit_code = 1;
                        continue;
                    };
                    // THREAT[TM-INJ-019]: a readonly target fails the builtin
                    // visibly (status 1) and, as in bash's `read`, the later
                    // names are left alone.
                    let base = target.split('[').next().unwrap_or(&target);
                    if self.is_var_readonly(base) {
                        result
                            .stderr
                            .push_str(&self.diag(format!("{base}: readonly variable\n")));
                        result.exit_code = 1;
                        readonly_failed = true;
                        continue;
                    }
                    self.set_variable(name.clone(), value.clone());
                }
            }
        }
        result.side_effects = effects;
        if shift_failed {
            result.exit_code = 1;
        }
        if let Some(signal) = pending_self_signal {
            self.deliver_self_signal(signal, result).await;
        }
        Ok(())
    }

    /// `kill -SIG $$`: bash runs that signal's trap if one is set, and
    /// otherwise lets the default action end the shell with status
    /// 128 + signal. Signals whose default is to be ignored do neither.
    async fn deliver_self_signal(&mut self, signal: i32, result: &mut ExecResult) {
        if let Some(trap_cmd) = self.signal_trap(signal) {
            if trap_cmd.is_empty() {
                return;
            }
            let mut stdout = std::mem::take(&mut result.stdout);
            let mut stderr = std::mem::take(&mut result.stderr);
            let flow = Box::pin(self.run_trap_command(&trap_cmd, &mut stdout, &mut stderr)).await;
            result.stdout = stdout;
            result.stderr = stderr;
            // An `exit` inside the handler ends the script, as it does in bash.
            if let Some((ControlFlow::Exit(code), _)) = flow {
                self.last_exit_code = code;
                result.exit_code = code;
                result.control_flow = ControlFlow::Exit(code);
            }
            return;
        }
        if matches!(
            builtins::signal_name(signal),
            Some("CHLD" | "URG" | "WINCH" | "CONT")
        ) {
            return;
        }
        let status = 128 + signal;
        self.last_exit_code = status;
        result.exit_code = status;
        result.control_flow = ControlFlow::Exit(status);
    }

    /// Resolve a path relative to cwd, normalizing `.` and `..` components.
    fn resolve_path(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            crate::fs::vfs_join(&self.cwd, p)
        };
        crate::fs::normalize_path(&joined)
    }

    /// Expand a process substitution (`<(cmd)` or `>(cmd)`).
    async fn expand_process_substitution(
        &mut self,
        commands: &[Command],
        is_input: bool,
    ) -> Result<String> {
        if !self.shell_features.has_process_substitution() {
            return Err(crate::error::Error::Execution(
                "bash: process substitution disabled".to_string(),
            ));
        }

        if is_input {
            let mut stdout = crate::limits::BudgetedBytes::new(Some(&self.execution_budget))?;
            // The substituted list runs in a subshell: nothing it changes
            // (variables, cwd, options, `$?`) reaches the parent.
            let snapshot = Box::new(self.snapshot_subshell_state());
            let last_exit_code = self.last_exit_code;
            self.bash_subshell += 1;
            self.enter_subshell_pid();
            self.xtrace_depth += 1;
            self.enter_nofork_scope(commands, true, 0);
            // Input substitutions still collect into /dev/fd. Live producer
            // bytes must stay in that capture instead of reaching outer sinks.
            let saved_callback = self.output_callback.take();
            let mut failed = None;
            for cmd in commands {
                match self.execute_command(cmd).await {
                    Ok(cmd_result) => {
                        // Process substitution is byte transport, unlike $(...).
                        // Admit capture growth without applying shell-word decoding.
                        if let Err(error) =
                            stdout.try_extend_from_slice(cmd_result.stdout.as_bytes())
                        {
                            failed = Some(error.into());
                            break;
                        }
                        if matches!(
                            cmd_result.control_flow,
                            ControlFlow::Exit(_) | ControlFlow::Abort
                        ) {
                            break;
                        }
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            self.output_callback = saved_callback;
            self.restore_subshell_state(*snapshot);
            self.leave_nofork_scope();
            self.last_exit_code = last_exit_code;
            if let Some(e) = failed {
                return Err(e);
            }
            // Allocated after the list ran: in bash the child closes its own
            // end, so a substitution nested inside sees the number free.
            let fd = self.allocate_proc_sub_fd()?;
            self.proc_subs
                .open(fd, crate::fs::ProcSubData::Input(Arc::new(stdout)));
            Ok(format!("/dev/fd/{fd}"))
        } else {
            let fd = self.allocate_proc_sub_fd()?;
            let buf = Arc::new(StdMutex::new(Vec::new()));
            self.proc_subs
                .open(fd, crate::fs::ProcSubData::Output(Arc::clone(&buf)));
            self.deferred_proc_subs.push((buf, commands.to_vec()));
            Ok(format!("/dev/fd/{fd}"))
        }
    }

    /// Fd for the next process substitution, as bash picks it: the highest
    /// free one counting down from 63, then upwards from 64.
    fn allocate_proc_sub_fd(&self) -> Result<i32> {
        let open = self.proc_subs.open_count();
        if open >= self.limits.max_file_descriptors {
            return Err(crate::limits::LimitExceeded::MaxFileDescriptors(
                self.limits.max_file_descriptors,
            )
            .into());
        }
        let first = crate::fs::PROC_SUB_FIRST_FD;
        // At most `open` numbers are taken by substitutions, so the upward
        // scan ends within `open + 64` steps.
        (3..=first)
            .rev()
            .chain(first + 1..=first + 1 + open as i32 + 64)
            .find(|&fd| !self.proc_subs.is_open(fd) && !self.fd_is_open(fd))
            .ok_or_else(|| {
                crate::limits::LimitExceeded::MaxFileDescriptors(self.limits.max_file_descriptors)
                    .into()
            })
    }

    // THREAT[TM-DOS-089]: Command substitution body extracted into a Box::pin-ed
    // helper to cap per-level stack usage. Without this, each $(...) nesting level
    // adds the full expand_word state machine to the call stack, causing overflow
    // at moderate depths despite the logical depth limit.
    /// Snapshot the subshell-isolated portion of interpreter state.
    /// Used by `$(...)` and arithmetic substitution to undo any mutations the
    /// substituted command performed. Each `Arc<HashMap>` clones in O(1)
    /// (refcount bump); only a substitution that actually mutates state pays
    /// for a real HashMap clone, and only the maps it actually touched.
    fn snapshot_subshell_state(&self) -> SubshellSnapshot {
        SubshellSnapshot {
            scoped: self.scoped.clone(),
            env: self.env.clone(),
            flags: self.flags,
            cwd: self.cwd.clone(),
            memory_budget: self.memory_budget.clone(),
            exec_fd_table: self.exec_fd_table.clone(),
            exec_input_fds: self.exec_input_fds.clone(),
            random_state: self.random_state.load(Ordering::Relaxed),
            getopts_char_idx: self.getopts_char_idx,
            last_bg_pid: self.last_bg_pid.clone(),
            seconds_base: self.seconds_base,
            bash_subshell: self.bash_subshell,
            bashpid: self.bashpid,
            xtrace_depth: self.xtrace_depth,
            err_trap_dormant: self.err_trap_dormant,
            debug_trap_dormant: self.debug_trap_dormant,
            line_base: self.line_base,
        }
    }

    /// A subshell gets a `$BASHPID` of its own (restored with the snapshot).
    fn enter_subshell_pid(&mut self) {
        self.bashpid = self.jobs.lock().alloc_pid();
    }

    /// Entering a subshell environment (`( )`, `$( )`, a pipeline stage):
    /// without `set -E` the ERR trap stays listed but no longer runs.
    fn enter_subshell_err_scope(&mut self) {
        if !self.flags.contains(BashFlags::ERRTRACE) {
            self.err_trap_dormant = true;
        }
    }

    /// `( )` and `$( )` do not run the DEBUG trap without `set -T`.
    /// Pipeline stages still do (bash runs it in each stage).
    fn enter_subshell_debug_scope(&mut self) {
        if !self.flags.contains(BashFlags::FUNCTRACE) {
            self.debug_trap_dormant = true;
        }
    }

    fn restore_subshell_state(&mut self, snap: SubshellSnapshot) {
        self.scoped = snap.scoped;
        self.env = snap.env;
        self.flags = snap.flags;
        self.cwd = snap.cwd;
        self.memory_budget = snap.memory_budget;
        self.exec_fd_table = snap.exec_fd_table;
        self.exec_input_fds = snap.exec_input_fds;
        self.random_state
            .store(snap.random_state, Ordering::Relaxed);
        self.getopts_char_idx = snap.getopts_char_idx;
        self.last_bg_pid = snap.last_bg_pid;
        self.seconds_base = snap.seconds_base;
        self.bash_subshell = snap.bash_subshell;
        self.bashpid = snap.bashpid;
        self.xtrace_depth = snap.xtrace_depth;
        self.err_trap_dormant = snap.err_trap_dormant;
        self.debug_trap_dormant = snap.debug_trap_dormant;
        self.line_base = snap.line_base;
    }

    /// Perform the redirections of a null command (no command word) and
    /// return its result. Input redirects are opened and discarded.
    /// A null command's outcome: its own error (`""`) under its redirects,
    /// or just the redirects. Boxed, and a single await in
    /// `execute_simple_command`, to keep that future's frame small on the
    /// `$(...)` recursion path (TM-DOS-089).
    fn null_command_outcome<'a>(
        &'a mut self,
        own_error: Option<ExecResult>,
        exit_code: i32,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            match own_error {
                Some(result) => {
                    self.last_exit_code = result.exit_code;
                    self.apply_redirections(result, redirects).await
                }
                None => {
                    self.execute_null_command_redirects(exit_code, redirects)
                        .await
                }
            }
        })
    }

    async fn execute_null_command_redirects(
        &mut self,
        exit_code: i32,
        redirects: &[Redirect],
    ) -> Result<ExecResult> {
        if let Some(stderr) = self.disabled_redirect_error(redirects) {
            self.last_exit_code = 1;
            return Ok(ExecResult::err(stderr, 1));
        }
        let named;
        let redirects = if redirects.iter().any(|r| r.fd_var.is_some()) {
            named = match self.apply_named_fd_redirects(redirects).await? {
                Ok(remaining) => remaining,
                Err(err) => {
                    self.last_exit_code = err.exit_code;
                    return Ok(err);
                }
            };
            named.as_slice()
        } else {
            redirects
        };
        match self
            .process_input_redirections(None, redirects, StdinDemand::Nothing, HighFdStdin::Any)
            .await
        {
            Ok(_) => {}
            Err(crate::error::Error::CommandFailure(msg)) => {
                self.last_exit_code = 1;
                return Ok(ExecResult::err(msg, 1));
            }
            Err(e) => return Err(e),
        }
        let result = ExecResult {
            exit_code,
            ..Default::default()
        };
        let result = self.apply_redirections(result, redirects).await?;
        self.last_exit_code = result.exit_code;
        Ok(result)
    }

    /// Match `$(<file)`: a lone simple command with no name, arguments or
    /// assignments and a single stdin (`<`) redirect. Returns its redirects.
    fn cmd_subst_file_read(commands: &[Command]) -> Option<&[Redirect]> {
        let [Command::Simple(cmd)] = commands else {
            return None;
        };
        let bare_name = cmd.name.parts.is_empty()
            || matches!(cmd.name.parts.as_slice(), [WordPart::Literal(s)] if s.is_empty());
        let [redirect] = cmd.redirects.as_slice() else {
            return None;
        };
        (bare_name
            && !cmd.name.quoted
            && cmd.args.is_empty()
            && cmd.assignments.is_empty()
            && redirect.kind == RedirectKind::Input
            && redirect.fd_var.is_none()
            && matches!(redirect.fd, None | Some(0)))
        .then_some(cmd.redirects.as_slice())
    }

    fn execute_compound_with_redirects<'a>(
        &'a mut self,
        compound: &'a CompoundCommand,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            if let Some(stderr) = self.disabled_redirect_error(redirects) {
                return Ok(ExecResult::err(stderr, 1));
            }
            match self.resolve_split_redirect_targets(redirects).await? {
                Ok(None) => {}
                Ok(Some(resolved)) => {
                    return self
                        .execute_compound_with_redirects(compound, &resolved)
                        .await;
                }
                Err(failed) => return Ok(failed),
            }
            if let Some((scope, remaining)) = self.open_here_fds(redirects).await? {
                let result = self
                    .execute_compound_with_redirects(compound, &remaining)
                    .await;
                self.close_here_fds(scope);
                return result;
            }
            if redirects.iter().any(|r| r.fd_var.is_some()) {
                let remaining = match self.apply_named_fd_redirects(redirects).await? {
                    Ok(remaining) => remaining,
                    Err(err) => return Ok(err),
                };
                return self
                    .execute_compound_with_redirects(compound, &remaining)
                    .await;
            }
            let scope_len = self.fd_redirect_scope.len();
            redirection::push_redirect_scope_fds(&mut self.fd_redirect_scope, redirects);
            let result = self
                .execute_compound_with_redirects_inner(compound, redirects)
                .await;
            self.fd_redirect_scope.truncate(scope_len);
            result
        })
    }

    fn execute_compound_with_redirects_inner<'a>(
        &'a mut self,
        compound: &'a CompoundCommand,
        redirects: &'a [Redirect],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<ExecResult>> + Send + 'a>> {
        Box::pin(async move {
            let end_line = (!redirects.is_empty())
                .then(|| Self::compound_end_line(compound))
                .flatten();
            if let Some(line) = end_line {
                self.current_line = line;
            }
            // Process input redirections before executing compound.
            // WTF: a coproc fd as a compound's stdin (`while read l; do
            // ...; done <&${C[0]}`) is read to end of input up front, not
            // line by line as the loop runs.
            let stdin_setup = match self
                .process_input_redirections(None, redirects, StdinDemand::All, HighFdStdin::Any)
                .await
            {
                Ok(s) => s,
                Err(crate::error::Error::CommandFailure(msg)) => {
                    return Ok(ExecResult::err(msg, 1));
                }
                Err(e) => return Err(e),
            };
            // Keep stdin's byte/text storage admitted through the body.
            let _stdin_storage = stdin_setup.stdin_lease;
            let stdin = stdin_setup.stdin;
            let prev_pipeline_stdin = if stdin.is_some() {
                let prev = self.pipeline_stdin.take();
                self.pipeline_stdin = stdin;
                Some(prev)
            } else {
                None
            };

            // Suspend output callback while output redirects are active
            // so that maybe_emit_output inside the compound body does not
            // leak output that will be redirected (e.g. `{ cmd; } 2>/dev/null`).
            let region = self.enter_output_region(redirects);

            let has_dup_output = redirects.iter().any(|r| r.kind == RedirectKind::DupOutput);
            let has_file_redirect = redirects.iter().any(|r| {
                matches!(
                    r.kind,
                    RedirectKind::Output
                        | RedirectKind::Clobber
                        | RedirectKind::Append
                        | RedirectKind::OutputBoth
                )
            });
            let capture_pending_fd = (has_dup_output && has_file_redirect)
                || redirection::has_high_fd_file_redirect(redirects);
            if capture_pending_fd {
                if self.pending_fd_capture_depth == 0 {
                    self.clear_pending_fd_redirect_state();
                }
                self.pending_fd_capture_depth += 1;
            }
            let result = self.execute_compound(compound).await;
            if capture_pending_fd {
                self.pending_fd_capture_depth = self.pending_fd_capture_depth.saturating_sub(1);
                if result.is_err() {
                    self.clear_pending_fd_redirect_state();
                }
            }
            // Restore callback before applying redirections
            self.leave_output_region(region);
            let result = result?;

            if let Some(prev) = prev_pipeline_stdin {
                self.pipeline_stdin = prev;
            }
            if redirects.is_empty() {
                Ok(result)
            } else {
                if let Some(line) = end_line {
                    self.current_line = line;
                }
                self.apply_redirections(result, redirects).await
            }
        })
    }

    fn execute_cmd_subst<'a>(
        &'a mut self,
        commands: &'a [Command],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String>> + Send + 'a>> {
        Box::pin(async move {
            // Command substitution runs in a subshell: snapshot all
            // mutable state so mutations don't leak to the parent.
            let snapshot = self.snapshot_subshell_state();
            // Its stdout is captured; its stderr goes to the caller's fd 2.
            let saved_merge = std::mem::replace(&mut self.merge_stderr, false);
            self.bash_subshell += 1;
            self.enter_subshell_pid();
            self.xtrace_depth += 1;
            self.enter_subshell_err_scope();
            self.enter_subshell_debug_scope();
            // The outer command's queued stderr must not pass through the
            // substitution's own redirects (`$(cmd 2>&1)`).
            let held_stderr = self.hold_subst_stderr();
            // THREAT[TM-DOS-111]: Expansion happens before top-level output caps,
            // so reserve every byte before growing the substitution buffer.
            let mut stdout = BudgetedString::new(Some(&self.execution_budget))?;
            let file_read = Self::cmd_subst_file_read(commands);
            if let Some(redirects) = file_read {
                // `$(<file)` / `$(< file)`: bash's shorthand for `$(cat file)`
                // (#2448). A bare input redirect would otherwise run an empty
                // command and produce nothing.
                // The optimized read replaces execution, not its accounting.
                self.charge_command_execution()?;
                let read = if self.disabled_redirect_error(redirects).is_some() {
                    Err(crate::error::Error::CommandFailure(String::new()))
                } else {
                    self.process_input_redirections(
                        None,
                        redirects,
                        StdinDemand::All,
                        HighFdStdin::Any,
                    )
                    .await
                };
                match read {
                    Ok(setup) => {
                        // Retain admitted input storage through substitution.
                        let _stdin_storage = setup.stdin_lease;
                        if let Some(content) = setup.stdin {
                            // Cover the temporary byte copy made by the
                            // command-substitution text boundary.
                            let _content_lease =
                                self.execution_budget.lease_bytes(content.len())?;
                            stdout.try_push_str(&content.command_substitution_text())?;
                        }
                        self.last_exit_code = 0;
                    }
                    Err(crate::error::Error::CommandFailure(msg)) => {
                        // `$(< missing)` reports like bash.
                        self.queue_subst_stderr(&msg.into());
                        self.last_exit_code = 1;
                    }
                    Err(e) => return Err(e),
                }
            }
            let commands: &[Command] = if file_read.is_some() { &[] } else { commands };
            // bash clears `set -e` in a command substitution unless
            // `shopt -s inherit_errexit`; the snapshot restores it.
            let inherit_errexit = self.is_errexit_enabled()
                && self
                    .scoped
                    .variables
                    .get("SHOPT_inherit_errexit")
                    .is_some_and(|v| v == "1");
            if self.is_errexit_enabled() && !inherit_errexit {
                self.insert_variable_checked("SHOPT_e".to_string(), "0".to_string());
            }
            // Captured output must not reach the streaming callback: compound
            // commands (`case`, `{ }`, `if`) emit through it as they run.
            let saved_callback = self.output_callback.take();
            let mut run: Result<()> = Ok(());
            // Entered and left around the loop alone, which never returns
            // early, so an error cannot leave the scope current.
            self.enter_nofork_scope(commands, false, 0);
            for cmd in commands {
                let cmd_result = match self.execute_command(cmd).await {
                    Ok(r) => r,
                    Err(e) => {
                        run = Err(e);
                        break;
                    }
                };
                if let Err(e) = stdout.try_push_str(&cmd_result.stdout.command_substitution_text())
                {
                    run = Err(e.into());
                    break;
                }
                // Not captured: bash's substitution writes it to the outer
                // stderr (`x=$(nocmd)` reports `nocmd: command not found`).
                self.queue_subst_stderr(&cmd_result.stderr);
                self.last_exit_code = cmd_result.exit_code;
                if matches!(
                    cmd_result.control_flow,
                    ControlFlow::Exit(_) | ControlFlow::Abort
                ) {
                    break;
                }
                if inherit_errexit
                    && self.errexit_active()
                    && cmd_result.exit_code != 0
                    && !cmd_result.errexit_suppressed
                {
                    break;
                }
            }
            self.leave_nofork_scope();
            self.output_callback = saved_callback;
            if run.is_err() {
                self.release_held_subst_stderr(held_stderr);
            }
            run?;
            // Fire EXIT trap set inside the command substitution
            if let Some(trap_cmd) = self.scoped.traps.get("EXIT").cloned()
                && snapshot.scoped.traps.get("EXIT") != Some(&trap_cmd)
                && let Ok(trap_script) = self.parse_shell_text(&trap_cmd)
                && let Ok(trap_result) = self
                    .execute_capture_only_sequence(&trap_script.commands)
                    .await
            {
                stdout.try_push_str(&trap_result.stdout.command_substitution_text())?;
                self.queue_subst_stderr(&trap_result.stderr);
            }
            self.release_held_subst_stderr(held_stderr);
            self.restore_subshell_state(snapshot);
            self.merge_stderr = saved_merge;
            self.counters.pop_subst();
            self.subst_generation += 1;
            let trimmed_len = stdout.trim_end_matches('\n').len();
            let mut stdout = stdout.into_inner();
            stdout.truncate(trimmed_len);
            Ok(stdout)
        })
    }

    /// Maximum recursion depth for arithmetic expression evaluation.
    /// THREAT[TM-DOS-026]: Prevents stack overflow via deeply nested arithmetic like
    /// $(((((((...)))))))
    const MAX_ARITHMETIC_DEPTH: usize = 50;
    /// Shared recursion fuel for arithmetic variable expansion.
    /// THREAT[TM-DOS-026]: Bounds branching recursive variable expressions before they allocate exponentially.
    const MAX_ARITHMETIC_EXPANSION_FUEL: usize = 8192;
    /// Maximum expanded arithmetic expression size accepted before fallback to 0.
    /// THREAT[TM-DOS-026]: Prevents attacker-controlled multi-megabyte arithmetic strings.
    const MAX_ARITHMETIC_EXPANSION_BYTES: usize = 64 * 1024;
    /// Longest run of source text echoed into one arithmetic diagnostic.
    /// THREAT[TM-INF-022]: an arithmetic error names both the whole expression
    /// and the unparsed rest as the "error token". Both come from the script,
    /// so an expression just under `MAX_ARITHMETIC_EXPANSION_BYTES` rendered a
    /// diagnostic about twice that size. Capping each echoed fragment keeps the
    /// line inside the 1 KiB diagnostic budget while leaving room for the fixed
    /// text that says what actually went wrong. See L-ARITH-002.
    const MAX_ARITHMETIC_DIAG_ECHO: usize = 256;

    /// Expand a string as a variable reference, or return as literal.
    /// Used for associative array keys which may be variable refs or literals.
    ///
    /// In real bash, associative array subscripts are treated as literal strings
    /// unless they contain explicit `$var` or `${var}` references. A bare name
    /// like `key` in `${assoc[key]}` is the string "key", NOT the value of
    /// variable `$key`. (Issue #861)
    fn expand_variable_or_literal(&self, s: &str) -> String {
        // Handle $var and ${var} references in assoc array keys
        let trimmed = s.trim();
        if !trimmed.contains(['"', '\'', '\\'])
            && trimmed.matches('$').count() <= 1
            && let Some(var_name) = trimmed.strip_prefix('$')
        {
            let var_name = var_name.trim_start_matches('{').trim_end_matches('}');
            return self.expand_variable(var_name);
        }
        if !s.contains(['$', '"', '\'', '\\']) {
            // Bare names are literal string keys — do NOT look up as variables.
            return s.to_string();
        }
        self.expand_key_text(s)
    }

    /// An assoc key with several references or quotes (`"$i$i"`, `'k'`,
    /// `a$b`): quotes are removed and `$name`/`${name}` expand. `$(...)`
    /// stays literal text here (no command runs from a read path).
    #[inline(never)]
    fn expand_key_text(&self, s: &str) -> String {
        self.expand_key_text_with(s, false)
    }

    /// [`Self::expand_key_text`]; `plain` reads only plain scalar values
    /// (no nameref, array or special-parameter resolution).
    fn expand_key_text_with(&self, s: &str, plain: bool) -> String {
        let lookup = |name: &str, braced: bool| {
            Ok::<_, std::convert::Infallible>(if !plain && !braced {
                self.expand_variable(name)
            } else if plain {
                self.scoped.variables.get(name).cloned().unwrap_or_default()
            } else if let Some(arr) = name
                .strip_suffix("[@]")
                .or_else(|| name.strip_suffix("[*]"))
            {
                // `assoc["${array[@]}"]`: the elements joined (bash, without
                // strict_array).
                let sep = if name.ends_with("[*]") {
                    self.get_ifs_separator()
                } else {
                    " ".to_string()
                };
                self.array_values(self.resolve_nameref(arr)).join(&sep)
            } else {
                self.resolve_param_expansion_name(name).1
            })
        };
        let mut out = String::new();
        Self::scan_key_text(s, lookup, |text| {
            out.push_str(text);
            Ok(())
        })
        .unwrap();
        out
    }

    /// One quote/key scanner; callers own lookup semantics and recursion budgets.
    fn scan_key_text<T: std::ops::Deref<Target = str>, E>(
        s: &str,
        mut lookup: impl FnMut(&str, bool) -> std::result::Result<T, E>,
        mut append: impl FnMut(&str) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        // Borrow names from the source: scanners must not allocate an
        // unmetered temporary before a fallible expansion callback runs.
        let mut chars = s.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            match c {
                '"' => {}
                '\'' => {
                    for (_, q) in chars.by_ref() {
                        if q == '\'' {
                            break;
                        }
                        append(q.encode_utf8(&mut [0; 4]))?;
                    }
                }
                '\\' => {
                    if let Some((_, c)) = chars.next() {
                        append(c.encode_utf8(&mut [0; 4]))?;
                    }
                }
                '$' if chars.peek().is_some_and(|(_, c)| *c == '{') => {
                    let (start, _) = chars.next().unwrap();
                    let mut end = s.len();
                    for (i, n) in chars.by_ref() {
                        if n == '}' {
                            end = i;
                            break;
                        }
                    }
                    append(&lookup(&s[start + 1..end], true)?)?;
                }
                '$' if chars
                    .peek()
                    .is_some_and(|(_, n)| n.is_ascii_alphanumeric() || *n == '_') =>
                {
                    let start = chars.peek().unwrap().0;
                    let mut end = start;
                    while let Some(&(i, n)) = chars.peek() {
                        if !(n.is_ascii_alphanumeric() || n == '_') {
                            break;
                        }
                        end = i + n.len_utf8();
                        chars.next();
                    }
                    append(&lookup(&s[start..end], false)?)?;
                }
                _ => append(c.encode_utf8(&mut [0; 4]))?,
            }
        }
        Ok(())
    }

    /// Fully expand an associative array key using standard word expansion.
    /// This preserves literal bare names (e.g. `x` -> `x`) while correctly
    /// expanding embedded/multiple parameter references (e.g. `foo$bar`).
    /// Expand an assoc key written as raw shell text (`unset 'm["$k"]'`):
    /// quotes are lexed and removed, then the word expands.
    async fn expand_raw_assoc_key(&mut self, s: &str) -> Result<String> {
        if !s.contains(['"', '\'', '\\']) {
            return self.expand_assoc_key(s).await;
        }
        let script = Parser::with_limits(
            &format!(": {s}"),
            self.limits.max_ast_depth,
            self.limits.max_parser_operations,
        )
        .parse();
        if let Ok(script) = script
            && let [Command::Simple(cmd)] = script.commands.as_slice()
            && let [word] = cmd.args.as_slice()
        {
            return self.expand_word(word).await;
        }
        self.expand_assoc_key(s).await
    }

    async fn expand_assoc_key(&mut self, s: &str) -> Result<String> {
        let word = Parser::parse_word_string_with_limits(
            s,
            self.limits.max_ast_depth,
            self.limits.max_parser_operations,
        );
        self.expand_word(&word).await
    }

    /// THREAT[TM-INJ-009]: Check if a variable name is an internal marker.
    fn is_internal_variable(name: &str) -> bool {
        is_internal_variable(name)
    }

    /// THREAT[TM-INF-017]: Check if a variable should be hidden from output.
    fn is_hidden_variable(name: &str) -> bool {
        is_hidden_variable(name)
    }

    /// Set a variable, respecting dynamic scoping.
    /// If the variable is declared `local` in any active call frame, update that frame.
    /// Otherwise, set in global variables.
    /// THREAT[TM-DOS-060]: Checks memory budget before inserting.
    /// Run a function definition. Out of line: `execute_command`'s frame
    /// repeats per `$(...)` level (TM-DOS-089).
    #[inline(never)]
    fn define_function(&mut self, func_def: &FunctionDef) -> ExecResult {
        // POSIX mode: a special builtin cannot become a function; a
        // non-interactive bash exits with status 2.
        if self.posix_special_builtin(&func_def.name) {
            return self.special_builtin_function_error(&func_def.name);
        }
        // `$foo-bar() {...}`, `foo-$(cmd)() {...}`: bash parses these but
        // refuses the name when the definition runs.
        if func_def
            .name
            .contains(['$', '`', '\u{1e}', '\u{1f}', '\x00'])
        {
            let shown: String = func_def
                .name
                .chars()
                .filter(|c| !matches!(c, '\u{1e}' | '\u{1f}' | '\x00'))
                .collect();
            return ExecResult::err(self.diag(format!("`{shown}': not a valid identifier\n")), 1);
        }
        // THREAT[TM-ISO-006]: Admit retained filename/key bytes before cloning
        // or inserting metadata. Sharing source storage prevents N deep copies;
        // conservative per-function charging bounds distinct-file retention too.
        let file = self.bash_source_stack.last().map(|frame| &frame.file);
        let body_bytes = function_storage_bytes(func_def)
            .saturating_add(file.map_or(0, |file| file.len()))
            .saturating_add(func_def.name.len());
        let is_new = !self.scoped.functions.contains_key(&func_def.name);
        let old_body_bytes = if is_new {
            0
        } else {
            self.scoped
                .functions
                .get(&func_def.name)
                .map(|func| self.function_retained_bytes(func))
                .unwrap_or(0)
        };
        match self.memory_budget.check_function_insert(
            body_bytes,
            is_new,
            old_body_bytes,
            &self.memory_limits,
        ) {
            Ok(()) => {
                let file = file.cloned().unwrap_or_default();
                self.memory_budget
                    .record_function_insert(body_bytes, is_new, old_body_bytes);
                self.functions_mut()
                    .insert(func_def.name.clone(), func_def.clone());
                Arc::make_mut(&mut self.scoped.function_files).insert(func_def.name.clone(), file);
            }
            // Preserve the established silent skip at the function-count cap.
            Err(_)
                if is_new
                    && self.memory_budget.function_count
                        >= self.memory_limits.max_function_count => {}
            Err(error) => {
                self.memory_limit_error.get_or_insert(error);
            }
        }
        ExecResult::ok(String::new())
    }

    /// `v=x f` / `v=x eval ...`: hand the prefix assignments to the call as
    /// a temp-env scope (see `tempenv_frames`).
    #[inline(never)]
    fn arm_tempenv(&mut self, name: &str, var_saves: &[(String, Option<String>)]) {
        if self.scoped.functions.contains_key(name) || matches!(name, "eval" | "source" | ".") {
            self.pending_tempenv = Some(var_saves.to_vec());
        }
    }

    /// POSIX mode: `v=x :` / `v=x readonly y` keep their prefix assignments
    /// (special builtins); `x=tmp unset x` still reveals the old `x`.
    #[inline(never)]
    fn keep_posix_prefix(
        &self,
        name: &str,
        env_saves: &mut HashMap<String, Option<String>>,
        var_saves: &mut Vec<(String, Option<String>)>,
    ) {
        if name != "unset" && self.posix_special_builtin(name) {
            env_saves.clear();
            var_saves.clear();
        }
    }

    /// A declaration builtin written literally: its `name=value` operands
    /// are assignments (no splitting, no globbing). `$e x=$v` (e=export)
    /// and `builtin export x=$v` are ordinary words.
    #[inline(never)]
    fn is_decl_keyword(name: &str, command: &SimpleCommand) -> bool {
        matches!(
            name,
            "declare" | "typeset" | "local" | "export" | "readonly"
        ) && command
            .name
            .parts
            .iter()
            .all(|p| matches!(p, WordPart::Literal(_)))
    }

    /// `export v=*`: a declaration operand that is an assignment.
    #[inline(never)]
    fn is_decl_assignment_word(word: &Word) -> bool {
        matches!(word.parts.first(), Some(WordPart::Literal(s)) if Self::is_assignment_prefix(s))
    }

    /// `foo() {...}` where `foo` is a special builtin in POSIX mode: a
    /// non-interactive bash exits with status 2.
    #[inline(never)]
    fn special_builtin_function_error(&self, name: &str) -> ExecResult {
        ExecResult {
            stderr: self
                .diag(format!("`{name}': is a special builtin\n"))
                .into(),
            exit_code: 2,
            control_flow: ControlFlow::Exit(2),
            ..Default::default()
        }
    }

    fn is_posix_mode(&self) -> bool {
        self.scoped
            .variables
            .get("SHOPT_posix")
            .is_some_and(|v| v == "1")
    }

    /// `name` is a POSIX special builtin and the shell is in POSIX mode:
    /// functions cannot shadow it and its prefix assignments persist.
    fn posix_special_builtin(&self, name: &str) -> bool {
        matches!(
            name,
            ":" | "."
                | "break"
                | "continue"
                | "eval"
                | "exec"
                | "exit"
                | "export"
                | "readonly"
                | "return"
                | "set"
                | "shift"
                | "times"
                | "trap"
                | "unset"
        ) && self.is_posix_mode()
    }

    fn set_variable(&mut self, name: String, value: String) {
        // THREAT[TM-INJ-009]: Block user assignment to internal marker variables
        if Self::is_internal_variable(&name) {
            return;
        }
        if name == "PWD" {
            self.pwd_shadow = Some(self.cwd.clone());
        }
        // Resolve nameref: if `name` is a nameref, assign to the target
        // instead. The common case (no nameref) moves `name` through.
        let resolved_string: String = if self.scoped.namerefs.is_empty() {
            name
        } else {
            if let Some(target) = self.scoped.namerefs.get(&name)
                && target.is_empty()
            {
                // `declare -n r; r=x`: the first value assigned is the target.
                self.set_nameref(&name, value);
                return;
            }
            match self.resolve_nameref_strict(&name) {
                Ok(target) => target,
                Err(()) => {
                    self.record_arith_error(format!("warning: {name}: circular name reference"));
                    return;
                }
            }
        };
        // A nameref to an element (`declare -n r=a[1]`) writes the element.
        if resolved_string.ends_with(']') && resolved_string.contains('[') {
            self.set_parameter_expansion_target(&resolved_string, value);
            return;
        }
        let resolved: &str = resolved_string.as_str();
        // RANDOM=N reseeds the PRNG (matches bash behavior)
        // SRANDOM ignores assignment (bash 5.1).
        if resolved == "SRANDOM" {
            return;
        }
        // Assigning PATH empties the command hash table (bash).
        if resolved == "PATH" && !self.scoped.command_hash.is_empty() {
            Arc::make_mut(&mut self.scoped.command_hash).clear();
        }
        // Assigning OPTIND restarts `getopts` within an option group.
        if resolved == "OPTIND" {
            self.getopts_char_idx = 0;
        }
        if resolved == "RANDOM" {
            self.random_state
                .store(value.parse::<u32>().unwrap_or(0), Ordering::Relaxed);
            return;
        }
        let hist_var: Option<&'static str> = match resolved {
            "HISTSIZE" => Some("HISTSIZE"),
            "HISTFILESIZE" => Some("HISTFILESIZE"),
            _ => None,
        };
        // SECONDS=N restarts the count from N (non-numbers count as 0).
        if resolved == "SECONDS" {
            let base = value.trim().parse::<i64>().unwrap_or(0);
            self.seconds_base = (crate::time_compat::Instant::now(), base);
            return;
        }
        // Attribute lookup is now a single map probe + bit test.
        let attrs = self.var_attrs_get(resolved);
        // THREAT[TM-INJ-019/020/021]: Block assignment to readonly variables
        if attrs.contains(VarAttrs::READONLY) {
            return;
        }
        if attrs.contains(VarAttrs::NOVALUE) {
            self.remove_var_attr(resolved, VarAttrs::NOVALUE);
        }
        // Prefix assignments (`x=1 cmd`) store the text as given.
        let attrs = if self.assign_raw {
            attrs - (VarAttrs::INTEGER | VarAttrs::LOWER | VarAttrs::UPPER)
        } else {
            attrs
        };
        // Apply integer attribute (declare -i): evaluate as arithmetic
        let value = if attrs.contains(VarAttrs::INTEGER) {
            self.evaluate_arithmetic_with_assign(&value).to_string()
        } else {
            value
        };
        // Apply case conversion attributes (declare -l / declare -u)
        let value = if attrs.contains(VarAttrs::LOWER) {
            value.to_lowercase()
        } else if attrs.contains(VarAttrs::UPPER) {
            value.to_uppercase()
        } else {
            value
        };
        // Assigning an array name assigns element 0 (key "0" if associative).
        if !self.scoped.arrays.is_empty() && self.scoped.arrays.contains_key(resolved) {
            self.set_indexed_element_checked(resolved, 0, value);
            return;
        }
        if !self.scoped.assoc_arrays.is_empty() && self.scoped.assoc_arrays.contains_key(resolved) {
            self.set_assoc_element_checked(resolved_string, "0".to_string(), value);
            return;
        }
        // Exported names (EXPORT attribute, `set -a`, or a name inherited
        // from the host environment) mirror their value into `env`.
        let exported = attrs.contains(VarAttrs::EXPORT)
            || self.flags.contains(BashFlags::ALLEXPORT)
            || self.env.contains_key(resolved);
        if exported {
            let env_value = value.clone();
            if self.insert_variable_checked(resolved_string.clone(), value) {
                self.insert_env_checked(resolved_string, env_value);
            }
        } else {
            self.insert_variable_checked(resolved_string, value);
        }
        if let Some(name) = hist_var {
            self.history_variable_assigned(name);
        }
    }

    /// Subscript for a write to an indexed array: a negative index counts
    /// back from the end, and one before the start is an error
    /// (`a[-5]=x` on three elements: "bad array subscript").
    fn indexed_write_subscript(
        &mut self,
        arr_name: &str,
        key: &str,
    ) -> std::result::Result<usize, String> {
        // `a[]=x`: no subscript at all (bash fails the assignment).
        if key.trim().is_empty() {
            return Err(self.diag(format!("{arr_name}[{key}]: bad array subscript\n")));
        }
        // Evaluated once, with side effects: `a[i++]=x`, `a[a[0]=1]=X`.
        // A bad subscript (`a['2']=x`) fails the assignment.
        let raw_idx = self
            .try_evaluate_arithmetic_with_assign(key)
            .map_err(|msg| self.arith_diag("", &msg))?;
        if raw_idx >= 0 {
            return Ok(raw_idx as usize);
        }
        let len = self
            .scoped
            .arrays
            .get(arr_name)
            .and_then(|a| a.keys().max().map(|m| m.saturating_add(1) as i128))
            .unwrap_or(0);
        let idx = len + raw_idx as i128;
        if idx < 0 {
            return Err(self.diag(format!("{arr_name}[{key}]: bad array subscript\n")));
        }
        Ok(idx as usize)
    }

    /// Resolve an indexed-array subscript the same way for read-before-write and write paths.
    /// Index read by `${a[key]}` / `$((a[key]))`: `None` (after reporting
    /// "bad array subscript", which bash does without failing the command)
    /// when a negative index reaches before element 0.
    fn read_indexed_array_subscript(&self, arr_name: &str, key: &str) -> Option<usize> {
        // `${a[]}`: an expansion error that abandons the line.
        if key.trim().is_empty() {
            self.record_arith_error(format!("{arr_name}[{key}]: bad array subscript"));
            return None;
        }
        let raw_idx = self.evaluate_arithmetic(key);
        if raw_idx >= 0 {
            return Some(raw_idx as usize);
        }
        let len = self
            .scoped
            .arrays
            .get(arr_name)
            .and_then(|a| a.keys().max().map(|m| m.saturating_add(1) as i128))
            .unwrap_or(0);
        let idx = len + raw_idx as i128;
        if idx < 0 {
            self.warn_bad_subscript(arr_name);
            return None;
        }
        Some(idx as usize)
    }

    /// Queue bash's non-fatal `name: bad array subscript` report.
    pub(super) fn warn_bad_subscript(&self, name: &str) {
        let msg = self.diag(format!("{name}: bad array subscript\n"));
        if let Ok(mut w) = self.subscript_warnings.lock()
            // THREAT[TM-DOS-130]: bounded like other queued diagnostics.
            && w.len() < 64 * 1024
        {
            w.push_str(&msg);
        }
    }

    fn resolve_indexed_array_subscript(&self, arr_name: &str, key: &str) -> usize {
        let raw_idx = self.evaluate_arithmetic(key);
        self.normalize_indexed_array_subscript(arr_name, raw_idx)
    }

    fn normalize_indexed_array_subscript(&self, arr_name: &str, raw_idx: i64) -> usize {
        if raw_idx < 0 {
            let len = self
                .scoped
                .arrays
                .get(arr_name)
                .and_then(|a| a.keys().max().map(|m| m.saturating_add(1) as i128))
                .unwrap_or(0);
            (len + raw_idx as i128).max(0) as usize
        } else {
            raw_idx as usize
        }
    }

    /// Budgeted write of one associative-array element (key already expanded).
    fn set_assoc_element_checked(&mut self, resolved_name: String, key: String, value: String) {
        let old_len = self
            .scoped
            .assoc_arrays
            .get(&resolved_name)
            .and_then(|a| a.get(&key))
            .map(String::len);
        let is_new_entry = old_len.is_none();
        let added = if is_new_entry {
            key.len() + value.len()
        } else {
            value.len()
        };
        if !self.admit_array_write(usize::from(is_new_entry), added, old_len.unwrap_or(0)) {
            return;
        }
        self.assoc_arrays_mut()
            .entry(resolved_name)
            .or_default()
            .insert(key, value);
    }

    /// Set a parameter expansion assignment target (`:=`), including array elements.
    fn set_parameter_expansion_target(&mut self, name: &str, value: String) {
        if let Some(bracket) = name.find('[')
            && name.ends_with(']')
        {
            let arr_name = &name[..bracket];
            let key = &name[bracket + 1..name.len() - 1];
            let resolved_name = self.resolve_nameref(arr_name).to_string();

            if self.scoped.assoc_arrays.contains_key(&resolved_name) {
                let expanded_key = self.expand_variable_or_literal(key);
                self.set_assoc_element_checked(resolved_name, expanded_key, value);
                return;
            }

            // A scalar written through a subscript becomes element 0.
            self.promote_scalar_to_indexed(&resolved_name);
            let index = self.resolve_indexed_array_subscript(&resolved_name, key);
            let old_len = self
                .scoped
                .arrays
                .get(&resolved_name)
                .and_then(|a| a.get(&index))
                .map(String::len);
            let is_new_entry = old_len.is_none();
            if !self.admit_array_write(usize::from(is_new_entry), value.len(), old_len.unwrap_or(0))
            {
                return;
            }
            self.arrays_mut()
                .entry(resolved_name)
                .or_default()
                .insert(index, value);
            return;
        }

        self.set_variable(name.to_string(), value);
    }

    /// Insert a variable into the global variables map with memory budget checking.
    /// Records a fatal execution error if the budget would be exceeded.
    /// Internal marker variables (_READONLY_, _NAMEREF_, etc.) bypass budget checks.
    fn insert_variable_checked(&mut self, key: String, value: String) -> bool {
        if key == "PWD" {
            self.pwd_shadow = Some(self.cwd.clone());
        }
        let is_internal = Self::is_internal_variable(&key);
        if !is_internal {
            // One look-up for both facts (clix patch, "a command's fixed costs").
            let old_value = self.scoped.variables.get(&key).map(String::len);
            let is_new = old_value.is_none();
            let (old_key_len, old_value_len) = old_value.map_or((0, 0), |len| (key.len(), len));
            if let Err(error) = self.memory_budget.check_variable_insert(
                key.len(),
                value.len(),
                is_new,
                old_key_len,
                old_value_len,
                &self.memory_limits,
            ) {
                self.memory_limit_error.get_or_insert(error);
                return false;
            }
            self.memory_budget.record_variable_insert(
                key.len(),
                value.len(),
                is_new,
                old_key_len,
                old_value_len,
            );
        }
        // Keep the SHOPT flag cache in sync whenever SHOPT_* gets written.
        // Internal callers that bulk-insert variables (snapshot restore,
        // SHOPT bookkeeping in `execute_shell`) go through this routine, so
        // hooking it here is the single sync point.
        if let Some(bit) = BashFlags::from_shopt_name(&key) {
            if value == "1" {
                self.flags.insert(bit);
            } else {
                self.flags.remove(bit);
            }
        }
        self.vars_mut().insert(key, value);
        true
    }

    /// `$_`, set after every command: left as it is when it already holds
    /// `value`, as it usually does in a loop, which saves two allocations
    /// and a hash per command (clix patch, "a command's fixed costs").
    fn set_last_argument(&mut self, value: &str) {
        if self
            .scoped
            .variables
            .get("_")
            .is_some_and(|old| old == value)
        {
            return;
        }
        self.insert_variable_checked("_".to_string(), value.to_string());
    }

    /// Index of the frame `local` declares into: the innermost frame, when it
    /// is a function frame.
    fn local_frame_index(&self) -> Option<usize> {
        let idx = self.call_stack.len().checked_sub(1)?;
        self.call_stack[idx].is_function.then_some(idx)
    }

    /// Is `name` a local of the innermost function frame?
    fn is_local_in_current_frame(&self, name: &str) -> bool {
        self.local_frame_index()
            .is_some_and(|idx| self.call_stack[idx].saved_vars.contains_key(name))
    }

    /// Make `name` local to the current function (shallow binding): save the
    /// caller-visible binding in the frame and leave `name` unset, keeping
    /// only an inherited export attribute. A second `local` of the same name
    /// in the same frame keeps the current local. Returns false outside a
    /// function.
    fn make_local(&mut self, name: &str) -> bool {
        let Some(idx) = self.local_frame_index() else {
            return false;
        };
        if self.call_stack[idx].saved_vars.contains_key(name) {
            return true;
        }
        // `v=x f` then `local v` in `f`: the local takes over the temp-env
        // binding, keeping its value; what it replaced is what returns.
        // A temp-env value further out (`v=x eval`, a caller's `v=x g`) is
        // inherited but stays in its scope.
        let visible = self.visible_tempenv(name);
        let takeover = visible
            .filter(|t| self.tempenv_frames[*t].0 == idx && self.tempenv_frames[*t].2)
            .and_then(|t| self.tempenv_frames[t].1.remove(name));
        // The saved value stays charged to the budget while the frame holds it.
        let mut value = Arc::make_mut(&mut self.scoped.variables).remove(name);
        let attrs = self.var_attrs_mut().remove(name);
        let nameref = self.namerefs_mut().remove(name);
        let env = self.env.get(name).cloned();
        let inherited = match takeover {
            Some(below) => std::mem::replace(&mut value, below),
            None if visible.is_some() => value.clone(),
            None => {
                // An exported caller value is hidden, not inherited.
                self.env_mut().remove(name);
                None
            }
        };
        let exported = attrs.is_some_and(|a| a.contains(VarAttrs::EXPORT)) || env.is_some();
        self.call_stack[idx].saved_vars.insert(
            name.to_string(),
            SavedVar {
                value,
                attrs,
                nameref,
                env,
            },
        );
        if exported {
            self.add_var_attr(name, VarAttrs::EXPORT);
        }
        if let Some(v) = inherited {
            self.insert_variable_checked(name.to_string(), v);
        }
        self.shadow_local_array_bindings(name, false, false);
        true
    }

    /// Remove the live scalar value of `name`, releasing its budget charge.
    fn remove_scalar_value(&mut self, name: &str) -> Option<String> {
        let old = Arc::make_mut(&mut self.scoped.variables).remove(name)?;
        if !Self::is_internal_variable(name) {
            self.memory_budget
                .record_variable_remove(name.len(), old.len());
        }
        Some(old)
    }

    /// Put a binding saved by `local` back in place of the live one.
    fn restore_saved_var(&mut self, name: &str, saved: SavedVar) {
        self.remove_scalar_value(name);
        if let Some(v) = saved.value {
            Arc::make_mut(&mut self.scoped.variables).insert(name.to_string(), v);
        }
        match saved.attrs {
            Some(a) => {
                self.var_attrs_mut().insert(name.to_string(), a);
            }
            None => {
                self.var_attrs_mut().remove(name);
            }
        }
        match saved.nameref {
            Some(t) => {
                self.namerefs_mut().insert(name.to_string(), t);
            }
            None => {
                self.namerefs_mut().remove(name);
            }
        }
        match saved.env {
            Some(e) => {
                self.env_mut().insert(name.to_string(), e);
            }
            None => {
                self.env_mut().remove(name);
            }
        }
    }

    /// Pop call frames down to `len`, restoring every shadowed binding.
    pub(crate) fn unwind_call_stack(&mut self, len: usize) {
        while self.call_stack.len() > len {
            self.pop_call_frame();
        }
    }

    /// Insert/update an environment variable with memory limit checks.
    /// Uses the variable limits to bound environment growth.
    fn insert_env_checked(&mut self, key: String, value: String) {
        let is_new = !self.env.contains_key(&key);
        if is_new && self.env.len() >= self.memory_limits.max_variable_count {
            self.memory_limit_error.get_or_insert_with(|| {
                crate::limits::LimitExceeded::Memory(format!(
                    "environment variable count limit ({}) exceeded",
                    self.memory_limits.max_variable_count
                ))
            });
            return;
        }

        let old_value_len = self.env.get(&key).map_or(0, |v| v.len());
        let old_key_len = if is_new { 0 } else { key.len() };
        let current_env_bytes: usize = self.env.iter().map(|(k, v)| k.len() + v.len()).sum();
        let new_env_bytes = (current_env_bytes
            .saturating_add(key.len())
            .saturating_add(value.len()))
        .saturating_sub(old_key_len + old_value_len);
        if new_env_bytes > self.memory_limits.max_total_variable_bytes {
            self.memory_limit_error.get_or_insert_with(|| {
                crate::limits::LimitExceeded::Memory(format!(
                    "environment variable byte limit ({}) exceeded",
                    self.memory_limits.max_total_variable_bytes
                ))
            });
            return;
        }

        self.env_mut().insert(key, value);
    }

    /// Pop a call frame and restore any global array bindings shadowed by `local -a/-A`.
    fn pop_call_frame(&mut self) -> Option<CallFrame> {
        let mut frame = self.call_stack.pop()?;
        for (name, saved) in std::mem::take(&mut frame.saved_vars) {
            self.restore_saved_var(&name, saved);
        }
        for (name, previous) in &frame.local_arrays {
            self.restore_array_binding(name, previous.clone());
        }
        for (name, previous) in &frame.local_assoc_arrays {
            self.restore_assoc_array_binding(name, previous.clone());
        }
        Some(frame)
    }

    /// Remember the array binding that a local indexed array declaration shadows.
    /// Snapshot the indexed-array binding a local declaration shadows.
    ///
    /// Returns `true` only when this call retained a *new* snapshot in the
    /// frame. A later shadow of the same name within the same frame keeps the
    /// first snapshot (`or_insert`) and returns `false`, signalling that the
    /// binding being replaced is a transient local — not retained anywhere —
    /// so its entries must be released from the array budget.
    fn remember_local_array_binding(&mut self, name: &str) -> bool {
        let previous = self.scoped.arrays.get(name).cloned();
        if let Some(frame) = self.call_stack.last_mut() {
            if frame.local_arrays.contains_key(name) {
                return false;
            }
            frame.local_arrays.insert(name.to_string(), previous);
            return true;
        }
        false
    }

    /// Snapshot the associative-array binding a local declaration shadows.
    /// See [`remember_local_array_binding`](Self::remember_local_array_binding)
    /// for the meaning of the return value.
    fn remember_local_assoc_array_binding(&mut self, name: &str) -> bool {
        let previous = self.scoped.assoc_arrays.get(name).cloned();
        if let Some(frame) = self.call_stack.last_mut() {
            if frame.local_assoc_arrays.contains_key(name) {
                return false;
            }
            frame.local_assoc_arrays.insert(name.to_string(), previous);
            return true;
        }
        false
    }

    fn restore_array_binding(&mut self, name: &str, previous: Option<HashMap<usize, String>>) {
        let (old_entries, old_bytes) = self
            .scoped
            .arrays
            .get(name)
            .map_or((0, 0), |a| (a.len(), Self::indexed_array_bytes(a)));
        // Saved bindings remain budgeted while shadowed; popping only releases
        // entries allocated by the local binding currently active in arrays.
        self.memory_budget.record_array_remove(old_entries);
        self.memory_budget.release_array_bytes(old_bytes);
        if let Some(arr) = previous {
            self.arrays_mut().insert(name.to_string(), arr);
        } else {
            self.arrays_mut().remove(name);
        }
    }

    fn restore_assoc_array_binding(
        &mut self,
        name: &str,
        previous: Option<HashMap<String, String>>,
    ) {
        let (old_entries, old_bytes) = self
            .scoped
            .assoc_arrays
            .get(name)
            .map_or((0, 0), |a| (a.len(), Self::assoc_array_bytes(a)));
        // Saved bindings remain budgeted while shadowed; popping only releases
        // entries allocated by the local binding currently active in assoc_arrays.
        self.memory_budget.record_array_remove(old_entries);
        self.memory_budget.release_array_bytes(old_bytes);
        if let Some(arr) = previous {
            self.assoc_arrays_mut().insert(name.to_string(), arr);
        } else {
            self.assoc_arrays_mut().remove(name);
        }
    }

    /// Removing retained storage must release both session budget charges.
    /// Shared by unset and builtin replacement, including empty mapfile input.
    fn remove_indexed_array(&mut self, name: &str) {
        if let Some(arr) = self.arrays_mut().remove(name) {
            self.memory_budget.record_array_remove(arr.len());
            self.memory_budget
                .release_array_bytes(Self::indexed_array_bytes(&arr));
        }
    }

    /// Bytes charged for an indexed array's contents. Indexed keys are machine
    /// integers already covered by the entry count, so only values are charged.
    fn indexed_array_bytes(arr: &HashMap<usize, String>) -> usize {
        arr.values().map(String::len).sum()
    }

    /// Bytes charged for an associative array's contents: keys are
    /// attacker-controlled strings, so they count too.
    fn assoc_array_bytes(arr: &HashMap<String, String>) -> usize {
        arr.iter().map(|(k, v)| k.len() + v.len()).sum()
    }

    /// Charge an array write against the entry count and the shared
    /// retained-byte budget. Returns `false` when the write must be skipped.
    ///
    /// THREAT[TM-DOS-060] THREAT[TM-DOS-114]: entry and byte refusals
    /// record the first rejection so execution fails visibly rather than
    /// silently dropping values and reporting success.
    fn admit_array_write(
        &mut self,
        new_entries: usize,
        added_bytes: usize,
        removed_bytes: usize,
    ) -> bool {
        if let Err(error) = self
            .memory_budget
            .check_array_entries(new_entries, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        if let Err(error) =
            self.memory_budget
                .check_array_bytes(added_bytes, removed_bytes, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        self.memory_budget.record_array_insert(new_entries);
        self.memory_budget
            .record_array_bytes(added_bytes, removed_bytes);
        true
    }

    /// Insert an array with memory budget checking.
    /// Returns true if the insert succeeded.
    fn insert_array_checked(&mut self, name: String, arr: HashMap<usize, String>) -> bool {
        // An array is never exported (bash): `export P; P=(a)` drops `P`
        // from the environment while keeping the export attribute.
        if self.env.contains_key(&name) {
            self.env_mut().remove(&name);
        }
        let new_entries = arr.len();
        let (old_entries, old_bytes) = self
            .scoped
            .arrays
            .get(&name)
            .map_or((0, 0), |a| (a.len(), Self::indexed_array_bytes(a)));
        let net = new_entries.saturating_sub(old_entries);
        let new_bytes = Self::indexed_array_bytes(&arr);
        if let Err(error) = self
            .memory_budget
            .check_array_entries(net, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        if let Err(error) =
            self.memory_budget
                .check_array_bytes(new_bytes, old_bytes, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        self.memory_budget.array_entries =
            self.memory_budget.array_entries.saturating_sub(old_entries) + new_entries;
        self.memory_budget.record_array_bytes(new_bytes, old_bytes);
        self.arrays_mut().insert(name, arr);
        true
    }

    /// Insert an associative array with memory budget checking.
    /// Returns true if the insert succeeded.
    #[allow(dead_code)]
    fn insert_assoc_array_checked(&mut self, name: String, arr: HashMap<String, String>) -> bool {
        let new_entries = arr.len();
        let (old_entries, old_bytes) = self
            .scoped
            .assoc_arrays
            .get(&name)
            .map_or((0, 0), |a| (a.len(), Self::assoc_array_bytes(a)));
        let net = new_entries.saturating_sub(old_entries);
        let new_bytes = Self::assoc_array_bytes(&arr);
        if let Err(error) = self
            .memory_budget
            .check_array_entries(net, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        if let Err(error) =
            self.memory_budget
                .check_array_bytes(new_bytes, old_bytes, &self.memory_limits)
        {
            self.memory_limit_error.get_or_insert(error);
            return false;
        }
        self.memory_budget.array_entries =
            self.memory_budget.array_entries.saturating_sub(old_entries) + new_entries;
        self.memory_budget.record_array_bytes(new_bytes, old_bytes);
        self.assoc_arrays_mut().insert(name, arr);
        true
    }

    /// Resolve nameref chains: if `name` has a `_NAMEREF_<name>` marker,
    /// follow the chain (up to 10 levels to prevent infinite loops).
    fn resolve_nameref<'a>(&'a self, name: &'a str) -> &'a str {
        // Fast path: most variables aren't namerefs. One hashmap lookup decides.
        if self.scoped.namerefs.is_empty() {
            return name;
        }
        let mut current = name;
        let mut visited = std::collections::HashSet::new();
        visited.insert(name);
        for _ in 0..10 {
            if let Some(target) = self.scoped.namerefs.get(current) {
                // THREAT[TM-INJ-011]: Detect cyclic namerefs and stop.
                if !visited.insert(target.as_str()) {
                    // Cycle detected — return original name (Bash emits a warning)
                    return name;
                }
                current = target.as_str();
            } else {
                break;
            }
        }
        current
    }

    /// Expand command substitutions `$(...)` within an arithmetic expression string.
    /// Parses the expr, executes any embedded command subs, and replaces them with output.
    async fn expand_command_subs_in_arithmetic(&mut self, expr: &str) -> Result<String> {
        let mut result = String::new();
        let mut chars = expr.chars().peekable();
        while let Some(ch) = chars.next() {
            if ch == '`' {
                // `` `cmd` ``: the old-style form of `$(cmd)`; `\``, `\\`
                // and `\$` lose their backslash.
                let mut cmd = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '`' => break,
                        '\\' if matches!(chars.peek(), Some('`' | '\\' | '$')) => {
                            cmd.extend(chars.next());
                        }
                        _ => cmd.push(c),
                    }
                }
                let out = match self.parse_shell_text(&cmd) {
                    Ok(script) if self.counters.push_subst(&self.limits).is_ok() => {
                        self.execute_cmd_subst(&script.commands).await?
                    }
                    _ => String::new(),
                };
                result.push_str(if out.is_empty() { "0" } else { &out });
                continue;
            }
            if ch == '$' && chars.peek() == Some(&'(') {
                // Check it's not $(( ... )) (arithmetic)
                let remaining: String = chars.clone().collect();
                if remaining.starts_with("((") {
                    // $(( ... )) — keep as-is for arithmetic eval
                    result.push('$');
                    continue;
                }
                // $( ... ) — command substitution, find matching close paren
                chars.next(); // consume '('
                let mut depth = 1i32;
                let mut cmd = String::new();
                for c in chars.by_ref() {
                    if c == '(' {
                        depth += 1;
                        cmd.push(c);
                    } else if c == ')' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                        cmd.push(c);
                    } else {
                        cmd.push(c);
                    }
                }
                // Execute the command and substitute in a subshell context:
                // save/restore mutable state so mutations don't leak.
                match self.parse_shell_text(&cmd) {
                    Ok(script) => {
                        if self.counters.push_subst(&self.limits).is_err() {
                            result.push('0');
                        } else {
                            // Same subshell semantics as `$(...)` in words,
                            // including the `$(<file)` shorthand.
                            let trimmed = self.execute_cmd_subst(&script.commands).await?;
                            if trimmed.is_empty() {
                                result.push('0');
                            } else {
                                result.push_str(&trimmed);
                            }
                        }
                    }
                    Err(_) => result.push('0'),
                }
            } else {
                result.push(ch);
            }
        }
        Ok(result)
    }

    /// Get the separator for `[*]` array joins: first char of IFS, or space if IFS unset.
    fn get_ifs_separator(&self) -> String {
        // THREAT[TM-DOS-036]: IFS separator lookup must not use generic
        // expansion. Namerefs can point IFS at special parameters like `*`,
        // whose expansion re-enters this function. Resolve only regular
        // variable storage so local IFS and valid nameref targets still work.
        let name = self.resolve_nameref("IFS");
        if let Some(ifs) = self.lookup_regular_variable(name) {
            ifs.chars()
                .next()
                .map(|c| c.to_string())
                .unwrap_or_default()
        } else {
            // IFS unset: default separator is space
            " ".to_string()
        }
    }

    fn lookup_regular_variable(&self, name: &str) -> Option<String> {
        self.lookup_regular_variable_ref(name).map(str::to_owned)
    }

    fn lookup_regular_variable_ref(&self, name: &str) -> Option<&str> {
        if let Some(value) = self.scoped.variables.get(name) {
            return Some(value.as_str());
        }

        // `$arr` on an array is `${arr[0]}` (indexed) or `${arr["0"]}` (assoc).
        if let Some(arr) = self.scoped.arrays.get(name) {
            return arr.get(&0).map(String::as_str);
        }
        if let Some(arr) = self.scoped.assoc_arrays.get(name) {
            return arr.get("0").map(String::as_str);
        }

        self.env.get(name).map(String::as_str)
    }

    fn expand_variable(&self, name: &str) -> String {
        self.expand_variable_cow(name).into_owned()
    }

    fn expand_variable_cow(&self, name: &str) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        // Resolve nameref before expansion
        let name = self.resolve_nameref(name);

        // If resolved name is an array element ref like "a[2]", expand as array access
        if let Some(bracket) = name.find('[')
            && name.ends_with(']')
        {
            let arr_name = &name[..bracket];
            let idx_str = &name[bracket + 1..name.len() - 1];
            if let Some(arr) = self.scoped.assoc_arrays.get(arr_name) {
                // `declare -n r='A["k"]'` / `'A[$k]'`: the key is shell text.
                // Plain variable values only, so a reference cannot recurse.
                if idx_str.contains(['$', '"', '\'', '\\']) {
                    let key = self.expand_key_text_with(idx_str, true);
                    return Cow::Owned(arr.get(&key).cloned().unwrap_or_default());
                }
                return Cow::Owned(arr.get(idx_str).cloned().unwrap_or_default());
            } else if let Some(arr) = self.scoped.arrays.get(arr_name) {
                let idx: usize = self.evaluate_arithmetic(idx_str).try_into().unwrap_or(0);
                return Cow::Owned(arr.get(&idx).cloned().unwrap_or_default());
            }
            return Cow::Owned(String::new());
        }

        // Check for special parameters (POSIX required)
        match name {
            "?" => return Cow::Owned(self.last_exit_code.to_string()),
            "#" => {
                // Number of positional parameters
                if let Some(frame) = self.call_stack.last() {
                    return Cow::Owned(frame.positional.len().to_string());
                }
                return Cow::Owned("0".to_string());
            }
            "@" => {
                // All positional parameters (space-separated as string)
                if let Some(frame) = self.call_stack.last() {
                    return Cow::Owned(frame.positional.join(" "));
                }
                return Cow::Owned(String::new());
            }
            "*" => {
                // All positional parameters joined by IFS first char
                if let Some(frame) = self.call_stack.last() {
                    let sep = self.get_ifs_separator();
                    return Cow::Owned(frame.positional.join(&sep));
                }
                return Cow::Owned(String::new());
            }
            // THREAT[TM-INF-014]: Return sandboxed PID, not real host PID.
            "$" => {
                return Cow::Owned("1".to_string());
            }
            // A subshell's own virtual pid (`$$` stays the shell's).
            "BASHPID" => {
                return Cow::Owned(if self.bashpid == 0 {
                    "1".to_string()
                } else {
                    self.bashpid.to_string()
                });
            }
            "!" => {
                // $! - PID of most recent background command
                // In Bashkit's virtual environment, background jobs run synchronously
                // Return empty string or last job ID placeholder
                if let Some(last_bg_pid) = &self.last_bg_pid {
                    return Cow::Owned(last_bg_pid.clone());
                }
                return Cow::Owned(String::new());
            }
            "-" => {
                // $- - Current option flags, from the SHOPT_* variables.
                let flags = builtins::dollar_dash(&self.scoped.variables);
                if !self.interactive {
                    return Cow::Owned(flags);
                }
                // `bash -i`: `i` follows `h` (`himBHc` order).
                let at = flags.find('h').map_or(0, |i| i + 1);
                return Cow::Owned(format!("{}i{}", &flags[..at], &flags[at..]));
            }
            "RANDOM" => {
                // $RANDOM - LCG matching bash behavior, seeded per-instance.
                // LCG: state = state * 1103515245 + 12345 (glibc constants)
                let prev = self.random_state.load(Ordering::Relaxed);
                let next = prev.wrapping_mul(1103515245).wrapping_add(12345);
                self.random_state.store(next, Ordering::Relaxed);
                return Cow::Owned(((next >> 16) & 0x7fff).to_string());
            }
            "SRANDOM" => {
                // $SRANDOM - 32 bits from the OS CSPRNG, not the LCG (bash 5.1).
                let mut b = [0u8; 4];
                if getrandom::fill(&mut b).is_err() {
                    return Cow::Owned(String::new());
                }
                return Cow::Owned(u32::from_le_bytes(b).to_string());
            }
            // $LINENO - current line number from command span. A
            // `local LINENO` is an ordinary variable and `unset LINENO`
            // makes it ordinary (bash).
            "LINENO" if !self.lineno_unset && !self.is_local_anywhere("LINENO") => {
                return Cow::Owned(self.current_line.to_string());
            }
            // `PWD=x` / `unset PWD` hold until the directory changes
            // (bash keeps PWD an ordinary variable that `cd` rewrites).
            "PWD" => {
                if self.pwd_shadow.as_ref() == Some(&self.cwd) {
                    return Cow::Owned(
                        self.scoped
                            .variables
                            .get("PWD")
                            .cloned()
                            .unwrap_or_default(),
                    );
                }
                return Cow::Owned(self.cwd.to_string_lossy().to_string());
            }
            "OLDPWD" => {
                if let Some(v) = self.scoped.variables.get("OLDPWD") {
                    return Cow::Owned(v.clone());
                }
                return Cow::Owned(self.cwd.to_string_lossy().to_string());
            }
            "HOSTNAME" => {
                if let Some(v) = self.scoped.variables.get("HOSTNAME") {
                    return Cow::Owned(v.clone());
                }
                return Cow::Owned("localhost".to_string());
            }
            "BASH_VERSION" => {
                return Cow::Owned(COMPAT_BASH_VERSION.to_string());
            }
            "BASH_SUBSHELL" => {
                return Cow::Owned(self.bash_subshell.to_string());
            }
            // The enabled `set -o` / `shopt` options, colon-separated.
            "SHELLOPTS" => return Cow::Owned(builtins::shellopts_value(&self.scoped.variables)),
            "BASHOPTS" => return Cow::Owned(builtins::bashopts_value(&self.scoped.variables)),
            "SECONDS" => {
                let (start, base) = self.seconds_base;
                let elapsed = i64::try_from(start.elapsed().as_secs()).unwrap_or(i64::MAX);
                return Cow::Owned(base.saturating_add(elapsed).to_string());
            }
            _ => {}
        }

        // Check for numeric positional parameter ($1, $2, etc.)
        if let Ok(n) = name.parse::<usize>() {
            if n == 0 {
                // $0 is the script/shell name; functions and `source`
                // do not change it.
                if let Some(frame) = self.call_stack.iter().rev().find(|f| !f.keeps_arg0) {
                    return Cow::Owned(frame.name.clone());
                }
                return Cow::Owned(Self::DEFAULT_ARG0.to_string());
            }
            // $1, $2, etc. (1-indexed)
            if let Some(frame) = self.call_stack.last()
                && n > 0
                && n <= frame.positional.len()
            {
                return Cow::Owned(frame.positional[n - 1].clone());
            }
            return Cow::Owned(String::new());
        }

        self.lookup_regular_variable_ref(name)
            .map(Cow::Borrowed)
            .unwrap_or_default()
    }

    /// Check if a variable is set (for `set -u` / nounset).
    /// Follows nameref indirection so that a nameref pointing to a defined
    /// target is considered "set".
    fn is_variable_set(&self, name: &str) -> bool {
        // Resolve nameref before checking — a nameref whose target exists is "set".
        let name = self.resolve_nameref(name);

        if name == "LINENO" && !self.lineno_unset {
            return true;
        }
        // Special variables are always "set"
        if matches!(
            name,
            "?" | "#"
                | "@"
                | "*"
                | "$"
                | "!"
                | "-"
                | "RANDOM"
                | "SRANDOM"
                | "PWD"
                | "OLDPWD"
                | "HOSTNAME"
                | "BASH_VERSION"
                | "SECONDS"
                | "BASH_SUBSHELL"
                | "SHELLOPTS"
                | "BASHOPTS"
        ) {
            return true;
        }
        // Positional params $0..$N
        if let Ok(n) = name.parse::<usize>() {
            if n == 0 {
                return true;
            }
            return self
                .call_stack
                .last()
                .map(|f| n <= f.positional.len())
                .unwrap_or(false);
        }
        // Shell variables
        if self.scoped.variables.contains_key(name) {
            return true;
        }
        // Environment
        self.env.contains_key(name)
    }

    /// Check if nounset (`set -u`) is active.
    fn is_nounset(&self) -> bool {
        self.flags.contains(BashFlags::NOUNSET)
    }

    /// Check if pipefail (`set -o pipefail`) is active.
    fn is_pipefail(&self) -> bool {
        self.flags.contains(BashFlags::PIPEFAIL)
    }

    /// The DEBUG handler to run before the next command, if any: not
    /// inside another trap handler (TM-DOS-035), nor in a `( )` / `$( )`
    /// subshell or function body that does not inherit it.
    fn has_debug_trap(&self) -> bool {
        !self.in_trap && !self.debug_trap_dormant && self.scoped.traps.contains_key("DEBUG")
    }

    /// Run the DEBUG handler now, if one applies (see `run_debug_trap`).
    fn debug_trap_now<'a>(
        &'a mut self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Option<Box<DebugTrapOutput>>> + Send + 'a>,
    > {
        Box::pin(async move {
            let cmd = self.debug_trap_pending()?;
            Some(Box::new(self.run_debug_trap(cmd).await))
        })
    }

    fn debug_trap_pending(&self) -> Option<String> {
        if self.in_trap || self.debug_trap_dormant {
            return None;
        }
        self.scoped.traps.get("DEBUG").cloned()
    }

    /// Run the DEBUG handler (fires before each simple command, `(( ))`,
    /// `[[ ]]`, `case` and each `for` round). It sees `$LINENO` of the
    /// command about to run; `$?` survives it; `return` in a function returns from it; an
    /// `exit` (or a failure under `set -e`) ends the shell. Boxed so callers'
    /// frames hold only a pointer (TM-DOS-089).
    fn run_debug_trap<'a>(
        &'a mut self,
        trap_cmd: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = DebugTrapOutput> + Send + 'a>> {
        Box::pin(async move {
            let mut out = DebugTrapOutput::default();
            let saved_exit = self.last_exit_code;
            let count_before = self.output_emit_count;
            let flow = self
                .run_trap_command(&trap_cmd, &mut out.stdout, &mut out.stderr)
                .await;
            if self.output_emit_count != count_before {
                // Already streamed: the command's own output must still
                // stream after it, so the enclosing command must not see
                // this as its output having been emitted.
                self.output_emit_count = count_before;
                out.stdout = crate::StreamData::new();
                out.stderr = crate::StreamData::new();
            }
            self.last_exit_code = saved_exit;
            out.exit = match flow {
                Some((ControlFlow::Exit(code), _)) => Some(code),
                Some((ControlFlow::Return(code), _)) => {
                    out.returned = true;
                    Some(code)
                }
                Some((ControlFlow::None, code))
                    if code != 0 && self.flags.contains(BashFlags::ERREXIT) =>
                {
                    Some(code)
                }
                _ => None,
            };
            out
        })
    }

    /// Run a trap handler's command, merging its output into the result the
    /// caller is building.
    /// Returns the handler's control flow and status, or `None` when the
    /// handler cannot run (unparsable command, exhausted depth budget, or a
    /// failing handler): trap failures never disturb the interrupted command.
    /// Record the first trap-nesting depth error for the `exec` boundary.
    fn note_trap_depth_error(&mut self, error: LimitExceeded) {
        if self.trap_depth_error.is_none() {
            self.trap_depth_error = Some(error);
        }
    }

    /// Take the recorded trap-nesting depth error, if any.
    pub(crate) fn take_trap_depth_error(&mut self) -> Option<LimitExceeded> {
        self.trap_depth_error.take()
    }

    async fn run_trap_command(
        &mut self,
        trap_cmd: &str,
        stdout: &mut crate::StreamData,
        stderr: &mut crate::StreamData,
    ) -> Option<(ControlFlow, i32)> {
        // THREAT[TM-DOS-030]: Propagate interpreter parser limits.
        let Ok(trap_script) = self.parse_shell_text(trap_cmd) else {
            return None;
        };
        // THREAT[TM-DOS-020]: Bound nested trap delivery with a dedicated
        // hard cap that trips before native frames can exhaust small host
        // stacks, independent of command fuel, per-handler AST depth, and
        // the shared function/source budget (which is charged too, so a low
        // `max_function_depth` still stops function/signal mixes early).
        // Exhaustion skips the nested handler with a diagnostic; the first
        // trip is surfaced as a resource-limit error at the `exec`
        // boundary, and never disturbs the interrupted command.
        if self.trap_nesting >= HARD_MAX_TRAP_NESTING {
            self.note_trap_depth_error(LimitExceeded::MaxTrapDepth(HARD_MAX_TRAP_NESTING));
            stderr.push_str("bashkit: maximum trap nesting depth exceeded\n");
            return None;
        }
        self.trap_nesting += 1;
        if let Err(depth_error) = self.counters.push_function(&self.limits) {
            self.trap_nesting -= 1;
            self.note_trap_depth_error(depth_error);
            stderr.push_str("bashkit: maximum trap nesting depth exceeded\n");
            return None;
        }
        let was_in_trap = self.in_trap;
        self.in_trap = true;
        let saved_line_base = std::mem::replace(
            &mut self.line_base,
            isize::try_from(self.current_line.saturating_sub(1)).unwrap_or(0),
        );
        let emit_before = self.output_emit_count;
        self.xtrace_depth += 1;
        // THREAT[TM-DOS-020]: Box the handler execution so a trap /
        // source recursion cycle cannot grow the parent future with each
        // nesting level; the shared depth charge above then trips first.
        let result = Box::pin(self.execute_command_sequence(&trap_script.commands)).await;
        self.xtrace_depth -= 1;
        self.line_base = saved_line_base;
        self.in_trap = was_in_trap;
        self.trap_nesting -= 1;
        self.counters.pop_function();
        // THREAT[TM-DOS-030]: A failing handler must not disturb the
        // interrupted command, so execution errors end the handler here.
        // THREAT[TM-DOS-020]: resource exhaustion inside the handler
        // (a nested function/source call tripping depth or fuel) is not a
        // handler logic failure: record it so the `exec` boundary still
        // fails instead of silently stopping the recursion.
        let trap_result = match result {
            Ok(trap_result) => trap_result,
            Err(crate::error::Error::ResourceLimit(limit)) => {
                self.note_trap_depth_error(limit);
                return None;
            }
            Err(_) => return None,
        };
        self.maybe_emit_output(&trap_result.stdout, &trap_result.stderr, emit_before)
            .await
            .ok();
        stdout.append(&trap_result.stdout);
        stderr.append(&trap_result.stderr);
        Some((trap_result.control_flow, trap_result.exit_code))
    }

    /// Function entry: like bash, the body does not inherit the ERR trap
    /// without `set -E`, nor the RETURN trap without `set -T`. Returns the
    /// handlers set aside, for `leave_function_traps`.
    fn enter_function_traps(&mut self) -> (Option<String>, Option<String>, Option<String>) {
        let take = |this: &mut Self, key: &str, inherit: BashFlags| {
            if this.flags.contains(inherit) || !this.scoped.traps.contains_key(key) {
                None
            } else {
                this.traps_mut().remove(key)
            }
        };
        let err = take(self, "ERR", BashFlags::ERRTRACE);
        let ret = take(self, "RETURN", BashFlags::FUNCTRACE);
        let dbg = take(self, "DEBUG", BashFlags::FUNCTRACE);
        (err, ret, dbg)
    }

    /// Function return: a handler set aside on entry comes back unless the
    /// body set its own, which then stays (bash `trap_if_untrapped`).
    fn leave_function_traps(&mut self, saved: (Option<String>, Option<String>, Option<String>)) {
        for (key, handler) in [("ERR", saved.0), ("RETURN", saved.1), ("DEBUG", saved.2)] {
            if let Some(handler) = handler
                && !self.scoped.traps.contains_key(key)
            {
                self.traps_mut().insert(key.to_string(), handler);
            }
        }
    }

    /// Run the RETURN trap as a function or sourced file finishes, after
    /// its output. The handler keeps `$?`; an `exit` in it ends the shell.
    async fn run_return_trap(&mut self, result: &mut ExecResult, emit_before: u64) {
        if self.in_trap {
            return;
        }
        let Some(trap_cmd) = self.scoped.traps.get("RETURN").cloned() else {
            return;
        };
        self.maybe_emit_output(&result.stdout, &result.stderr, emit_before)
            .await
            .ok();
        let saved_exit = self.last_exit_code;
        let flow = self
            .run_trap_command(&trap_cmd, &mut result.stdout, &mut result.stderr)
            .await;
        self.last_exit_code = saved_exit;
        if let Some((flow @ ControlFlow::Exit(code), _)) = flow {
            result.control_flow = flow;
            result.exit_code = code;
        }
    }

    /// The trap set for `signal`, under any of the spellings `trap` accepts
    /// (`TERM`, `SIGTERM`, `15`).
    fn signal_trap(&self, signal: i32) -> Option<String> {
        let name = builtins::signal_name(signal);
        let keys = [
            name.map(str::to_string),
            name.map(|n| format!("SIG{n}")),
            Some(signal.to_string()),
        ];
        keys.into_iter()
            .flatten()
            .find_map(|key| self.scoped.traps.get(&key).cloned())
    }

    async fn run_err_trap(
        &mut self,
        stdout: &mut crate::StreamData,
        stderr: &mut crate::StreamData,
    ) {
        // THREAT[TM-DOS-035]: Suppress ERR trap re-entrancy while executing trap
        // handlers to prevent recursive ERR -> ERR amplification.
        if self.in_trap {
            return;
        }
        if let Some(trap_cmd) = self.scoped.traps.get("ERR").cloned() {
            // The handler runs with `$?` of the trapping command and the
            // shell keeps that status afterwards (bash restores it).
            let saved_exit = self.last_exit_code;
            let _ = Box::pin(self.run_trap_command(&trap_cmd, stdout, stderr)).await;
            self.last_exit_code = saved_exit;
        }
    }
}

/// `name=value` / `name+=value` argument with an unquoted, literal name:
/// an assignment under `set -k`. Returns the assignment.
fn keyword_assignment(word: &Word) -> Option<Assignment> {
    let Some(WordPart::Literal(first)) = word.parts.first() else {
        return None;
    };
    // A quoted word without per-part flags was quoted as a whole.
    let first_quoted = if word.part_quoted.iter().any(|q| *q) {
        word.part_quoted[0]
    } else {
        word.quoted
    };
    if first_quoted {
        return None;
    }
    let eq = first.find('=')?;
    let (name, append) = match first[..eq].strip_suffix('+') {
        Some(n) => (n, true),
        None => (&first[..eq], false),
    };
    if !is_valid_var_name(name) {
        return None;
    }
    let mut value = word.clone();
    value.raw = None;
    value.parts[0] = WordPart::Literal(first[eq + 1..].to_string());
    Some(Assignment {
        name: name.to_string(),
        index: None,
        value: AssignmentValue::Scalar(value),
        append,
    })
}

/// `set -k`: move assignment arguments into the command's assignments.
fn hoist_keyword_assignments(command: &SimpleCommand) -> SimpleCommand {
    let mut hoisted = command.clone();
    hoisted.args.clear();
    for word in &command.args {
        match keyword_assignment(word) {
            Some(assignment) => hoisted.assignments.push(assignment),
            None => hoisted.args.push(word.clone()),
        }
    }
    hoisted
}

/// Whether an ERE uses a `[:name:]` character class POSIX does not define
/// (`[[:foo:]]`), which regcomp rejects.
fn ere_has_invalid_char_class(pattern: &str) -> bool {
    const CLASSES: [&str; 12] = [
        "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
        "upper", "xdigit",
    ];
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '[' => {
                // Bracket expression: a leading `^` and a first `]` are members.
                i += 1;
                if chars.get(i) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    i += 1;
                }
                while i < chars.len() && chars[i] != ']' {
                    if chars[i] == '['
                        && let Some(&kind @ (':' | '.' | '=')) = chars.get(i + 1)
                    {
                        let start = i + 2;
                        let mut end = start;
                        while end + 1 < chars.len()
                            && !(chars[end] == kind && chars[end + 1] == ']')
                        {
                            end += 1;
                        }
                        if end + 1 >= chars.len() {
                            return false;
                        }
                        let name: String = chars[start..end].iter().collect();
                        if kind == ':' && !CLASSES.contains(&name.as_str()) {
                            return true;
                        }
                        i = end + 2;
                    } else {
                        i += 1;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    false
}

/// Turn a builtin's usage error into a failed command (exit 2) instead of
/// aborting the script. THREAT[TM-INF-022]: the message is capped at 1 KB.
/// Names real bash runs as shell builtins (`enable -a`). Their diagnostics
/// carry the shell's `$0: line N: ` prefix; everything else bashkit bundles
/// (cat, grep, sort, ...) is an external program in bash and keeps its own
/// `cat: ...` form.
const BASH_SHELL_BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
];

/// Give a bundled builtin's own stderr bash's diagnostic prefix.
///
/// Builtins have no interpreter handle, so they write `bash: name: msg` (or,
/// for shell builtins, bare `name: msg`) and the one dispatch point that
/// returns their result rewrites the line start to `prefix` (`$0: line N: `).
/// Usage lines (`name: usage: ...`) stay unprefixed, as in bash. Only the
/// builtin's own diagnostics reach here: execution plans (nested commands)
/// and `/dev/stderr` operand data are excluded by the caller.
fn prefix_builtin_diagnostics(
    stderr: &crate::StreamData,
    name: &str,
    prefix: &str,
    budget: &crate::limits::ExecutionBudget,
) -> Result<Option<(crate::StreamData, crate::stream::StreamStorage)>> {
    let bytes = stderr.as_bytes();
    if bytes.is_empty() {
        return Ok(None);
    }
    // THREAT[TM-DOS-103]: account before scanning or multiplying prefixes.
    // Poll by input chunk even when a single diagnostic line is enormous.
    for chunk in bytes.chunks(4096) {
        budget.consume_work(chunk.len().div_ceil(1024) as u64)?;
    }
    let shell_builtin = BASH_SHELL_BUILTINS.contains(&name);
    let own = format!("{name}: ");
    let usage = format!("{name}: usage:");
    let mut out = None;
    let mut offset = 0;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let (add_prefix, rest) = if let Some(rest) = line.strip_prefix(b"bash: ".as_slice()) {
            (true, rest)
        } else {
            (
                shell_builtin
                    && line.starts_with(own.as_bytes())
                    && !line.starts_with(usage.as_bytes()),
                line,
            )
        };
        budget.consume_work(
            1 + rest.len().div_ceil(1024) as u64
                + if add_prefix {
                    prefix.len().div_ceil(1024) as u64
                } else {
                    0
                },
        )?;
        if add_prefix {
            if out.is_none() {
                let mut bytes_out = crate::limits::BudgetedBytes::new(Some(budget))?;
                bytes_out.try_extend_from_slice(&bytes[..offset])?;
                out = Some(bytes_out);
            }
            out.as_mut()
                .unwrap()
                .try_extend_from_slice(prefix.as_bytes())?;
        }
        if let Some(out) = &mut out {
            out.try_extend_from_slice(rest)?;
        }
        offset += line.len();
    }
    out.map(|out| crate::StreamData::from_budgeted_bytes(out, budget).map_err(Into::into))
        .transpose()
}

fn builtin_usage_error(msg: &str) -> ExecResult {
    let mut msg = msg.trim_end().to_string();
    if msg.len() > 1024 {
        let mut cut = 1024;
        while !msg.is_char_boundary(cut) {
            cut -= 1;
        }
        msg.truncate(cut);
    }
    msg.push('\n');
    ExecResult::err(msg, 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bash;
    use crate::fs::InMemoryFs;
    use crate::parser::Parser;

    fn ordinary_pipeline_commands() -> Vec<Command> {
        let parser = Parser::new("{ :; } | :");
        let script = parser.parse().unwrap();
        let Command::Pipeline(pipeline) = script.commands.into_iter().next().unwrap() else {
            panic!("expected pipeline");
        };
        pipeline.commands
    }

    #[tokio::test]
    async fn pipeline_admission_respects_occupied_shared_job_slot() {
        let mut bash = Bash::new();
        bash.interpreter.begin_execution_budget();
        bash.interpreter.limits.max_background_jobs = 1;
        let slot = bash.interpreter.jobs.try_claim(1).unwrap();
        let result = bash
            .interpreter
            .execute_streaming_stages(&ordinary_pipeline_commands(), None, false)
            .await;
        assert!(matches!(
            result,
            Err(crate::Error::ResourceLimit(
                LimitExceeded::MaxConcurrentJobs(1)
            ))
        ));
        drop(slot);
        assert!(bash.interpreter.jobs.try_claim(1).is_some());
    }

    #[tokio::test]
    async fn pipeline_admission_reserves_storage_for_no_output_stage() {
        let mut bash = Bash::new();
        bash.interpreter.begin_execution_budget();
        bash.interpreter.limits.max_live_intermediate_bytes = 0;
        bash.interpreter.begin_execution_budget();
        let result = bash
            .interpreter
            .execute_streaming_stages(&ordinary_pipeline_commands(), None, false)
            .await;
        assert!(matches!(
            result,
            Err(crate::Error::ResourceLimit(LimitExceeded::ExecutionBudget(
                crate::limits::ExecutionBudgetExceeded::LiveBytes { .. }
            )))
        ));
        assert_eq!(bash.interpreter.execution_budget.live_bytes_for_test(), 0);
        assert!(bash.interpreter.jobs.try_claim(1).is_some());
    }

    #[tokio::test]
    async fn pipeline_admission_releases_storage_and_slots_after_completion() {
        let mut bash = Bash::new();
        bash.interpreter.begin_execution_budget();
        bash.interpreter.limits.max_background_jobs = 1;
        let result = bash
            .interpreter
            .execute_streaming_stages(&ordinary_pipeline_commands(), None, false)
            .await
            .unwrap();
        assert_eq!(result.len(), 2);
        assert!(result.iter().all(|r| r.exit_code == 0));
        assert!(bash.interpreter.jobs.try_claim(1).is_some());
        assert_eq!(bash.interpreter.execution_budget.live_bytes_for_test(), 0);
    }

    #[tokio::test]
    async fn pipeline_admission_checks_cancellation_before_construction() {
        let mut bash = Bash::new();
        bash.interpreter.begin_execution_budget();
        bash.interpreter.cancelled.store(true, Ordering::Relaxed);
        let result = bash
            .interpreter
            .execute_streaming_stages(&ordinary_pipeline_commands(), None, false)
            .await;
        assert!(matches!(result, Err(crate::Error::Cancelled)));
        assert!(bash.interpreter.jobs.try_claim(1).is_some());
        assert_eq!(bash.interpreter.execution_budget.live_bytes_for_test(), 0);
    }

    #[tokio::test]
    async fn pipeline_admission_drop_pending_and_reconcile_releases_owners() {
        use std::future::Future;
        let mut bash = Bash::new();
        bash.interpreter.limits.max_background_jobs = 1;
        bash.interpreter.begin_execution_budget();
        let script = Parser::new("{ sleep 1; } | cat").parse().unwrap();
        let Command::Pipeline(commands) = &script.commands[0] else {
            panic!("expected pipeline");
        };
        let budget = bash.interpreter.execution_budget.clone();
        let jobs = Arc::clone(&bash.interpreter.jobs);
        let mut future = Box::pin(bash.interpreter.execute_streaming_stages(
            &commands.commands,
            None,
            false,
        ));
        let waker = futures_util::task::noop_waker();
        let mut context = std::task::Context::from_waker(&waker);
        assert!(future.as_mut().poll(&mut context).is_pending());
        assert!(jobs.try_claim(1).is_none());
        assert!(budget.live_bytes_for_test() > 0);
        drop(future);
        assert!(jobs.try_claim(1).is_some());
        // Live final-stage dispatch owns its reader inside the command future.
        // Dropping it restores the subshell and releases both endpoints at once;
        // ordinary request reconciliation remains safe to repeat afterwards.
        assert_eq!(budget.live_bytes_for_test(), 0);
        bash.interpreter.clear_cancelled_execution_state();
        assert!(bash.interpreter.pipe_in.is_none());
        assert_eq!(budget.live_bytes_for_test(), 0);
    }

    #[test]
    fn pipeline_admission_environment_is_shared_and_isolated() {
        let mut bash = Bash::new();
        bash.interpreter.begin_execution_budget();
        bash.interpreter
            .env_mut()
            .insert("DEMO".into(), "parent".into());
        let mut child = bash.interpreter.fork_for_job();
        assert!(Arc::ptr_eq(&bash.interpreter.env, &child.env));
        child.env_mut().insert("DEMO".into(), "child".into());
        assert_eq!(bash.interpreter.env["DEMO"], "parent");
        assert_eq!(child.env["DEMO"], "child");
    }

    #[tokio::test]
    async fn function_metadata_shares_storage_and_drops_with_functions() {
        let mut bash = Bash::new();
        bash.exec("echo 'a() { :; }; b() { :; }' > /defs; source ////defs")
            .await
            .unwrap();
        let files = &bash.interpreter.scoped.function_files;
        assert!(Arc::ptr_eq(&files["a"], &files["b"]));
        let weak = Arc::downgrade(&files["a"]);
        bash.exec("(echo 'ghost() { :; }' > /child; source /child)")
            .await
            .unwrap();
        assert_eq!(bash.interpreter.scoped.function_files.len(), 2);
        bash.exec("chmod +x /child; /child").await.unwrap();
        assert_eq!(bash.interpreter.scoped.function_files.len(), 2);
        bash.exec("unset -f a b").await.unwrap();
        assert!(bash.interpreter.scoped.function_files.is_empty());
        assert!(weak.upgrade().is_none());
        assert_eq!(bash.interpreter.memory_budget.function_body_bytes, 0);
        assert_eq!(bash.interpreter.memory_budget.function_count, 0);
    }

    #[test]
    fn diagnostic_rewrite_checks_work_and_cancellation() {
        for cancelled in [false, true] {
            let limits = crate::limits::ExecutionLimits::new().max_work_units(2);
            let budget = crate::limits::ExecutionBudget::new(
                &limits,
                Arc::new(std::sync::atomic::AtomicBool::new(cancelled)),
            );
            let stderr = crate::StreamData::from("bash: unalias: x: not found\n".repeat(10));
            let error = prefix_builtin_diagnostics(&stderr, "unalias", "child: line 1: ", &budget)
                .unwrap_err();
            let expected = if cancelled { "cancel" } else { "work" };
            assert!(error.to_string().contains(expected), "{error}");
        }
    }

    /// TM-DOS-042: comma-list brace expansion must not recurse one frame per
    /// brace group (stack overflow) nor accumulate unbounded memory. A long
    /// `{a,b}{a,b}...` sequence — far under the input cap — used to descend to
    /// full depth before any cap engaged.
    #[test]
    fn brace_expansion_comma_sequence_is_bounded() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let interp = Interpreter::new(Arc::clone(&fs));
        let s = "{a,b}".repeat(50_000);
        let out = interp.expand_braces(&s);
        // Must terminate without panic/overflow and stay bounded.
        let total: usize = out.iter().map(String::len).sum();
        assert!(
            total <= Interpreter::MAX_EXPANSION_RESULT_BYTES + 1024,
            "brace expansion produced {total} bytes — should be byte-capped"
        );
    }

    #[test]
    fn test_empty_anchored_replacement_respects_expansion_limit() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let interp = Interpreter::new(Arc::clone(&fs));
        let replacement = "a".repeat(Interpreter::MAX_EXPANSION_RESULT_BYTES + 1);

        assert_eq!(interp.replace_pattern("x", "#", &replacement, false), "x");
        assert_eq!(interp.replace_pattern("x", "%", &replacement, false), "x");
    }

    #[test]
    fn replace_pattern_glob_on_long_value_is_linear() {
        // THREAT[TM-DOS-127]: a glob over a long value runs as a regex.
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let interp = Interpreter::new(Arc::clone(&fs));
        let value = "ab".repeat(200_000);
        let out = interp.replace_pattern(&value, "a?", "x", true);
        assert_eq!(out, "x".repeat(200_000));
        assert_eq!(interp.replace_pattern(&value, "z*", "x", true), value);
    }

    #[test]
    fn replace_pattern_extglob_budget() {
        // THREAT[TM-DOS-127]: the extglob fallback stops after its budget and
        // leaves the value unchanged instead of scanning quadratically.
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        Arc::make_mut(&mut interp.scoped.variables)
            .insert("SHOPT_extglob".to_string(), "1".to_string());
        assert_eq!(interp.replace_pattern("xaab", "+(a)", "-", false), "x-b");
        let value = format!("{}a", "b".repeat(10_000));
        assert_eq!(interp.replace_pattern(&value, "+(a)", "-", true), value);
    }

    #[test]
    fn test_per_element_param_expansion_respects_aggregate_limit() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        let replacement = "a".repeat(2048);
        interp.set_variable("p".to_string(), replacement);
        interp.call_stack.push(CallFrame {
            name: "f".to_string(),
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: vec!["x".to_string(); 6000],
            keeps_arg0: false,
        });

        let value = interp.resolve_param_expansion_name("@").1;
        let expanded = interp.apply_param_op_maybe_per_element(
            &value,
            "@",
            &ParameterOp::ReplaceFirst {
                pattern: "#".to_string(),
                replacement: "$p".to_string(),
            },
            "",
            false,
            true,
        );

        assert_eq!(expanded, value);
        assert!(expanded.len() < Interpreter::MAX_EXPANSION_RESULT_BYTES);
    }

    #[test]
    fn test_try_expand_range_alpha_large_step_does_not_loop() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let interp = Interpreter::new(Arc::clone(&fs));
        assert_eq!(
            interp.try_expand_range("a..z..256"),
            Some(vec!["a".to_string()])
        );
        assert_eq!(
            interp.try_expand_range("z..a..-256"),
            Some(vec!["z".to_string()])
        );
    }

    #[test]
    fn test_try_expand_range_numeric_large_step_does_not_overflow() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let interp = Interpreter::new(Arc::clone(&fs));

        assert_eq!(
            interp
                .try_expand_range("9223372036854775802..9223372036854775807..9223372036854775807"),
            Some(vec!["9223372036854775802".to_string()])
        );
        assert_eq!(
            interp.try_expand_range(
                "-9223372036854775803..-9223372036854775808..-9223372036854775808"
            ),
            Some(vec!["-9223372036854775803".to_string()])
        );
    }

    /// Test timeout with paused time for deterministic behavior
    #[tokio::test(start_paused = true)]
    async fn test_timeout_expires_deterministically() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));

        // timeout 0.001 sleep 10 - should timeout (1ms << 10s)
        let parser = Parser::new("timeout 0.001 sleep 10; echo $?");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(
            result.stdout.trim(),
            "124",
            "Expected exit code 124 for timeout"
        );
    }

    /// Test zero timeout
    #[tokio::test(start_paused = true)]
    async fn test_timeout_zero_deterministically() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));

        // timeout 0 sleep 1 - should timeout immediately
        let parser = Parser::new("timeout 0 sleep 1; echo $?");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(
            result.stdout.trim(),
            "124",
            "Expected exit code 124 for zero timeout"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn test_timeout_does_not_leak_function_locals() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        let parser =
            Parser::new("f(){ local secret=shh; sleep 10; }\ntimeout 0.001 f\necho \"<$secret>\"");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.stdout.trim(), "<>");
    }

    #[tokio::test(start_paused = true)]
    async fn test_timeout_does_not_leak_bash_stdin_to_following_command() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        let parser = Parser::new("printf secret | timeout 0.001 bash -c 'sleep 10'; cat");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.stdout, "");
    }

    #[test]
    fn test_cancelled_shell_frame_does_not_pop_function_depth() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.counters.function_depth = 1;
        interp.call_stack.push(CallFrame {
            name: "caller".to_string(),
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: Vec::new(),
            keeps_arg0: false,
        });
        let baseline_call_stack_len = interp.call_stack.len();
        let baseline_bash_source_len = interp.bash_source_stack.len();
        let baseline_function_depth = interp.counters.function_depth;

        interp.call_stack.push(CallFrame {
            name: "bash".to_string(),
            saved_vars: HashMap::new(),
            is_function: false,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: Vec::new(),
            keeps_arg0: false,
        });
        interp
            .bash_source_stack
            .push(SourceFrame::script("script.sh"));

        interp.reconcile_cancelled_execution_state(
            baseline_call_stack_len,
            baseline_bash_source_len,
            baseline_function_depth,
            None,
        );

        assert_eq!(interp.call_stack.len(), baseline_call_stack_len);
        assert_eq!(interp.bash_source_stack.len(), baseline_bash_source_len);
        assert_eq!(interp.counters.function_depth, baseline_function_depth);
    }

    /// Test that parse_duration preserves subsecond precision
    #[test]
    fn test_parse_timeout_duration_subsecond() {
        use crate::builtins::timeout::parse_duration;
        use std::time::Duration;

        // Should preserve subsecond precision
        let d = parse_duration("0.001").unwrap();
        assert_eq!(d, Duration::from_secs_f64(0.001));

        let d = parse_duration("0.5").unwrap();
        assert_eq!(d, Duration::from_millis(500));

        let d = parse_duration("1.5s").unwrap();
        assert_eq!(d, Duration::from_millis(1500));

        // Zero should work
        let d = parse_duration("0").unwrap();
        assert_eq!(d, Duration::ZERO);
    }

    // POSIX special builtins tests

    /// Helper to run a script and return result
    async fn run_script(script: &str) -> ExecResult {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        interp.execute(&ast).await.unwrap()
    }

    /// Helper to run a script with custom limits and return result.
    async fn run_script_with_limits(
        script: &str,
        limits: ExecutionLimits,
        memory_limits: crate::limits::MemoryLimits,
    ) -> Result<ExecResult> {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(limits);
        interp.set_memory_limits(memory_limits);
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        interp.execute(&ast).await
    }

    #[tokio::test]
    async fn test_ifs_split_field_limit_rejects_exploding_command_substitution() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(ExecutionLimits::default().max_word_split_fields(3));
        let parser = Parser::new("IFS=,; for x in $(echo a,b,c,d); do :; done");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("word split field limit (3) exceeded")
        );
    }

    #[tokio::test]
    async fn test_ifs_split_byte_limit_rejects_large_materialized_field() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(ExecutionLimits::default().max_word_split_bytes(5));
        let parser = Parser::new("v=abcdef; echo $v");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("word split byte limit (5) exceeded")
        );
    }

    #[tokio::test]
    async fn test_colon_null_utility() {
        // POSIX : (colon) - null utility, should return success
        let result = run_script(":").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "");
    }

    #[tokio::test]
    async fn test_colon_with_args() {
        // Colon should ignore arguments and still succeed
        let result = run_script(": arg1 arg2 arg3").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "");
    }

    #[tokio::test]
    async fn test_colon_in_while_loop() {
        // Common use case: while : (infinite loop, but we limit iterations)
        let result = run_script(
            "x=0; while :; do x=$((x+1)); if [ $x -ge 3 ]; then break; fi; done; echo $x",
        )
        .await;
        assert_eq!(result.stdout.trim(), "3");
    }

    #[tokio::test]
    async fn test_times_builtin() {
        // POSIX times - returns process times (zeros in virtual mode)
        let result = run_script("times").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("0m0.000s"));
    }

    #[tokio::test]
    async fn test_allexport_respects_env_memory_limits() {
        let limits = ExecutionLimits::new();
        let memory_limits = crate::limits::MemoryLimits::new().max_variable_count(5);
        let mut script = String::from("set -a\n");
        for i in 0..20 {
            script.push_str(&format!("V{i}=x\n"));
        }
        script.push_str("export -p | grep -c '^declare -x V' || true\n");
        let error = run_script_with_limits(&script, limits, memory_limits)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("variable count limit (5)"));
    }

    #[test]
    fn test_allexport_rejected_global_update_does_not_mutate_env() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_memory_limits(crate::limits::MemoryLimits::new().max_total_variable_bytes(20));

        interp.set_variable("FILL".to_string(), "123456789012".to_string());
        interp.flags.insert(BashFlags::ALLEXPORT);
        interp.set_variable("A".to_string(), "1".to_string());
        interp.set_variable("A".to_string(), "1234567890".to_string());

        assert_eq!(
            interp.scoped.variables.get("A").map(String::as_str),
            Some("1")
        );
        assert_eq!(interp.env.get("A").map(String::as_str), Some("1"));
    }

    #[test]
    fn test_allexport_rejected_local_update_does_not_mutate_env() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_memory_limits(crate::limits::MemoryLimits::new().max_total_variable_bytes(20));
        interp.call_stack.push(CallFrame {
            name: "f".to_string(),
            saved_vars: HashMap::new(),
            is_function: true,
            local_arrays: HashMap::new(),
            local_assoc_arrays: HashMap::new(),
            positional: Vec::new(),
            keeps_arg0: false,
        });
        interp.set_variable("FILL".to_string(), "123456789012".to_string());
        assert!(interp.make_local("A"));
        interp.flags.insert(BashFlags::ALLEXPORT);
        interp.set_variable("A".to_string(), "1".to_string());

        interp.set_variable("A".to_string(), "1234567890".to_string());

        assert!(interp.call_stack[0].saved_vars.contains_key("A"));
        assert_eq!(
            interp.scoped.variables.get("A").map(String::as_str),
            Some("1")
        );
        assert_eq!(interp.env.get("A").map(String::as_str), Some("1"));
    }

    #[tokio::test]
    async fn test_nested_loops_enforce_outer_loop_limit() {
        let limits = ExecutionLimits::new()
            .max_loop_iterations(2)
            .max_total_loop_iterations(100);
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(limits);
        let parser = Parser::new("for i in 1 2 3; do for j in 1; do :; done; done; echo done");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(matches!(
            err,
            crate::error::Error::ResourceLimit(crate::limits::LimitExceeded::MaxLoopIterations(2))
        ));
    }

    #[tokio::test]
    async fn test_nested_subshells_enforce_depth_limit() {
        let limits = ExecutionLimits::new().max_subshell_depth(2);
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(limits);
        let parser = Parser::new("( ( ( echo too-deep ) ) )");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(matches!(
            err,
            crate::error::Error::ResourceLimit(crate::limits::LimitExceeded::MaxSubshellDepth(2))
        ));
    }

    #[tokio::test]
    async fn test_pipeline_counts_each_stage_toward_command_limit() {
        let limits = ExecutionLimits::new().max_commands(2);
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.set_limits(limits);
        let parser = Parser::new("echo a | cat | cat");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(matches!(
            err,
            crate::error::Error::ResourceLimit(crate::limits::LimitExceeded::MaxCommands(2))
        ));
    }

    #[tokio::test]
    async fn test_readonly_basic() {
        // POSIX readonly - mark variable as read-only
        let result = run_script("readonly X=value; echo $X").await;
        assert_eq!(result.stdout.trim(), "value");
    }

    #[tokio::test]
    async fn test_special_param_dash() {
        // $- should return current option flags
        let result = run_script("set -e; echo \"$-\"").await;
        assert!(result.stdout.contains('e'));
    }

    #[tokio::test]
    async fn test_special_param_bang() {
        // $! - last background PID (empty in virtual mode with no bg jobs)
        let result = run_script("echo \"$!\"").await;
        // Should be empty or a placeholder
        assert_eq!(result.exit_code, 0);
    }

    // =========================================================================
    // Additional POSIX positive tests
    // =========================================================================

    #[tokio::test]
    async fn test_colon_variable_side_effect() {
        // Common pattern: use : with parameter expansion for defaults
        let result = run_script(": ${X:=default}; echo $X").await;
        assert_eq!(result.stdout.trim(), "default");
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_colon_in_if_then() {
        // Use : as no-op in then branch
        let result = run_script("if true; then :; fi; echo done").await;
        assert_eq!(result.stdout.trim(), "done");
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_readonly_set_and_read() {
        // Set readonly variable and verify it's accessible
        let result = run_script("readonly FOO=bar; readonly BAR=baz; echo $FOO $BAR").await;
        assert_eq!(result.stdout.trim(), "bar baz");
    }

    #[tokio::test]
    async fn test_readonly_mark_existing() {
        // Mark an existing variable as readonly
        let result = run_script("X=hello; readonly X; echo $X").await;
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_times_two_lines() {
        // times should output exactly two lines
        let result = run_script("times").await;
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines.len(), 2);
    }

    #[tokio::test]
    async fn test_eval_simple_command() {
        // eval should execute the constructed command
        let result = run_script("cmd='echo hello'; eval $cmd").await;
        // Note: eval stores command for interpreter, actual execution depends on interpreter support
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_special_param_dash_multiple_options() {
        // Set multiple options and verify $- contains them
        let result = run_script("set -e; set -x; echo \"$-\"").await;
        assert!(result.stdout.contains('e'));
        // Note: x is stored but we verify at least e is present
    }

    #[tokio::test]
    async fn test_special_param_dash_no_options() {
        // With no options set, $- should be empty or minimal
        let result = run_script("echo \"flags:$-:end\"").await;
        assert!(result.stdout.contains("flags:"));
        assert!(result.stdout.contains(":end"));
        assert_eq!(result.exit_code, 0);
    }

    // =========================================================================
    // POSIX negative tests (error cases / edge cases)
    // =========================================================================

    #[tokio::test]
    async fn test_colon_does_not_produce_output() {
        // Colon should never produce any output
        let result = run_script(": 'this should not appear'").await;
        assert_eq!(result.stdout, "");
        assert_eq!(result.stderr, "");
    }

    #[tokio::test]
    async fn test_eval_empty_args() {
        // eval with no arguments should succeed silently
        let result = run_script("eval; echo $?").await;
        assert!(result.stdout.contains('0'));
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_readonly_empty_value() {
        // readonly with empty value
        let result = run_script("readonly EMPTY=; echo \"[$EMPTY]\"").await;
        assert_eq!(result.stdout.trim(), "[]");
    }

    #[tokio::test]
    async fn test_times_no_args_accepted() {
        // times should ignore any arguments
        let result = run_script("times ignored args here").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("0m0.000s"));
    }

    #[tokio::test]
    async fn test_special_param_bang_empty_without_bg() {
        // $! should be empty when no background jobs have run
        let result = run_script("x=\"$!\"; [ -z \"$x\" ] && echo empty || echo not_empty").await;
        assert_eq!(result.stdout.trim(), "empty");
    }

    #[tokio::test]
    async fn test_colon_exit_code_zero() {
        // Verify colon always returns 0 even after failed command
        let result = run_script("false; :; echo $?").await;
        assert_eq!(result.stdout.trim(), "0");
    }

    #[tokio::test]
    async fn test_readonly_without_value_preserves_existing() {
        // readonly on existing var preserves value
        let result = run_script("VAR=existing; readonly VAR; echo $VAR").await;
        assert_eq!(result.stdout.trim(), "existing");
    }

    // bash/sh command tests

    #[tokio::test]
    async fn test_bash_c_simple_command() {
        // bash -c "command" should execute the command
        let result = run_script("bash -c 'echo hello'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_sh_c_simple_command() {
        // sh -c "command" should also work
        let result = run_script("sh -c 'echo world'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "world");
    }

    #[tokio::test]
    async fn test_bash_c_multiple_commands() {
        // bash -c with multiple commands separated by semicolon
        let result = run_script("bash -c 'echo one; echo two'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "one\ntwo\n");
    }

    #[tokio::test]
    async fn test_bash_c_with_positional_args() {
        // bash -c "cmd" arg0 arg1 - positional parameters
        let result = run_script("bash -c 'echo $0 $1' zero one").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "zero one");
    }

    #[tokio::test]
    async fn test_bash_script_file() {
        // bash script.sh - execute a script file
        let fs = Arc::new(InMemoryFs::new());
        fs.write_file(std::path::Path::new("/tmp/test.sh"), b"echo 'from script'")
            .await
            .unwrap();

        let mut interpreter = Interpreter::new(fs.clone());
        let parser = Parser::new("bash /tmp/test.sh");
        let script = parser.parse().unwrap();
        let result = interpreter.execute(&script).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "from script");
    }

    #[tokio::test]
    async fn test_bash_script_file_with_args() {
        // bash script.sh arg1 arg2 - script with arguments
        let fs = Arc::new(InMemoryFs::new());
        fs.write_file(std::path::Path::new("/tmp/args.sh"), b"echo $1 $2")
            .await
            .unwrap();

        let mut interpreter = Interpreter::new(fs.clone());
        let parser = Parser::new("bash /tmp/args.sh first second");
        let script = parser.parse().unwrap();
        let result = interpreter.execute(&script).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "first second");
    }

    #[tokio::test]
    async fn test_exec_fd_in_subshell_does_not_leak_to_parent() {
        let result = run_script(
            "(exec 3>/tmp/subshell-fd.txt; echo child >&3); echo parent >&3; cat /tmp/subshell-fd.txt",
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("child"));
        assert!(!result.stdout.contains("parent"));
    }

    #[tokio::test]
    async fn test_exec_fd_in_command_substitution_does_not_leak_to_parent() {
        let result = run_script(
            "x=$(exec 3>/tmp/cmd-sub-fd.txt; echo child >&3); echo parent >&3; cat /tmp/cmd-sub-fd.txt",
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("child"));
        assert!(!result.stdout.contains("parent"));
    }

    #[tokio::test]
    async fn test_bash_piped_script() {
        // echo "script" | bash - execute from stdin
        let result = run_script("echo 'echo piped' | bash").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "piped");
    }

    #[tokio::test]
    async fn test_bash_nonexistent_file() {
        // bash missing.sh - should error with exit code 127
        let result = run_script("bash /nonexistent/missing.sh").await;
        assert_eq!(result.exit_code, 127);
        assert!(result.stderr.contains("No such file"));
    }

    #[tokio::test]
    async fn test_bash_c_missing_argument() {
        // bash -c without command string - should error
        let result = run_script("bash -c").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("option requires an argument"));
    }

    #[tokio::test]
    async fn test_bash_c_syntax_error() {
        // bash -c with invalid syntax
        let result = run_script("bash -c 'if then'").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("syntax error"));
    }

    #[tokio::test]
    async fn test_bash_c_mutations_do_not_leak_to_parent() {
        // `bash -c` runs as a child process — variables it sets must not
        // become visible in the parent (real-bash semantics, see #1777).
        let result = run_script("bash -c 'X=inner'; echo \"[$X]\"").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "[]");
    }

    #[tokio::test]
    async fn test_bash_c_exit_code_propagates() {
        // Exit code from bash -c should propagate
        let result = run_script("bash -c 'exit 42'; echo $?").await;
        assert_eq!(result.stdout.trim(), "42");
    }

    #[tokio::test]
    async fn test_bash_nested() {
        // Nested bash -c calls
        let result = run_script("bash -c \"bash -c 'echo nested'\"").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "nested");
    }

    #[tokio::test]
    async fn test_sh_script_file() {
        // sh script.sh - same as bash script.sh
        let fs = Arc::new(InMemoryFs::new());
        fs.write_file(std::path::Path::new("/tmp/sh_test.sh"), b"echo 'sh works'")
            .await
            .unwrap();

        let mut interpreter = Interpreter::new(fs.clone());
        let parser = Parser::new("sh /tmp/sh_test.sh");
        let script = parser.parse().unwrap();
        let result = interpreter.execute(&script).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "sh works");
    }

    #[tokio::test]
    async fn test_bash_with_option_e() {
        // bash -e -c "command" - -e is accepted but doesn't change behavior in virtual mode
        let result = run_script("bash -e -c 'echo works'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "works");
    }

    #[tokio::test]
    async fn test_bash_empty_input() {
        // bash with no arguments or stdin does nothing
        let result = run_script("bash; echo done").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "done");
    }

    // Additional bash/sh tests for noexec, version, help

    #[tokio::test]
    async fn test_bash_n_syntax_check_success() {
        // bash -n parses but doesn't execute
        let result = run_script("bash -n -c 'echo should not print'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, ""); // Nothing printed - didn't execute
    }

    #[tokio::test]
    async fn test_bash_n_syntax_error_detected() {
        // bash -n catches syntax errors
        let result = run_script("bash -n -c 'if then'").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("syntax error"));
    }

    #[tokio::test]
    async fn test_bash_n_combined_flags() {
        // -n can be combined with other flags like -ne
        let result = run_script("bash -ne -c 'echo test'; echo done").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "done"); // Only "done" - bash -n didn't execute
    }

    #[tokio::test]
    async fn test_bash_version() {
        // --version shows Bashkit version
        let result = run_script("bash --version").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("Bashkit"));
        assert!(result.stdout.contains("virtual"));
    }

    #[tokio::test]
    async fn test_sh_version() {
        // sh --version also works
        let result = run_script("sh --version").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("virtual sh"));
    }

    #[tokio::test]
    async fn test_bash_help() {
        // --help shows usage
        let result = run_script("bash --help").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("Usage:"));
        assert!(result.stdout.contains("-c string"));
        assert!(result.stdout.contains("-n"));
    }

    #[tokio::test]
    async fn test_bash_double_dash() {
        // -- ends option processing
        let result = run_script("bash -- --help").await;
        // Should try to run file named "--help", which doesn't exist
        assert_eq!(result.exit_code, 127);
    }

    #[tokio::test]
    async fn test_bash_unknown_long_option_errors() {
        // A typo'd long option errors like real Bash (invalid option, exit 2),
        // instead of being silently ignored.
        let result = run_script("bash --verison").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("--verison: invalid option"));
        assert!(result.stderr.contains("Usage:"));
        assert!(result.stdout.is_empty());
    }

    #[tokio::test]
    async fn test_bash_unknown_short_option_errors() {
        // Unknown short option reports the offending flag and exits 2.
        let result = run_script("bash -q").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("-q: invalid option"));
        assert!(result.stderr.contains("Usage:"));
    }

    #[tokio::test]
    async fn test_sh_unknown_option_uses_shell_name() {
        // Error is prefixed with the invoked shell name (sh, not bash).
        let result = run_script("sh --nope").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("sh: --nope: invalid option"));
    }

    #[tokio::test]
    async fn test_bash_unknown_option_in_combined_short_flags() {
        // A bad char inside combined short flags is reported individually.
        let result = run_script("bash -eq -c 'echo hi'").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("-q: invalid option"));
    }

    #[tokio::test]
    async fn test_bash_accepted_long_option_norc() {
        // Options real Bash accepts (e.g. --norc) still run the command.
        let result = run_script("bash --norc -c 'echo hi'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "hi\n");
    }

    #[tokio::test]
    async fn test_bash_combined_ec_runs_command() {
        // -c combined with another short flag consumes the command string.
        let result = run_script("bash -ec 'echo combined'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "combined\n");
    }

    // Negative test cases

    #[tokio::test]
    async fn test_bash_invalid_syntax_in_file() {
        // Syntax error in script file - unclosed if
        let fs = Arc::new(InMemoryFs::new());
        fs.write_file(std::path::Path::new("/tmp/bad.sh"), b"if true; then echo x")
            .await
            .unwrap();

        let mut interpreter = Interpreter::new(fs.clone());
        let parser = Parser::new("bash /tmp/bad.sh");
        let script = parser.parse().unwrap();
        let result = interpreter.execute(&script).await.unwrap();

        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("syntax error"));
    }

    #[tokio::test]
    async fn test_bash_permission_in_sandbox() {
        // Filesystem operations work through bash -c
        let result = run_script("bash -c 'echo test > /tmp/out.txt && cat /tmp/out.txt'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "test");
    }

    #[tokio::test]
    async fn test_bash_all_positional() {
        // $@ and $* work correctly
        let result = run_script("bash -c 'echo $@' _ a b c").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "a b c");
    }

    #[tokio::test]
    async fn test_bash_arg_count() {
        // $# counts positional params
        let result = run_script("bash -c 'echo $#' _ 1 2 3 4").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "4");
    }

    // Security-focused tests

    #[tokio::test]
    async fn test_bash_no_real_bash_escape() {
        // Verify bash -c doesn't escape sandbox
        // Try to run a command that would work in real bash but not here
        let result = run_script("bash -c 'which bash 2>/dev/null || echo not found'").await;
        // 'which' is not a builtin, so this should fail
        assert!(result.stdout.contains("not found") || result.exit_code == 127);
    }

    #[tokio::test]
    async fn test_bash_nested_limits_respected() {
        // Deep nesting should eventually hit limits
        // This tests that bash -c doesn't bypass command limits
        let result = run_script("bash -c 'for i in 1 2 3; do echo $i; done'").await;
        assert_eq!(result.exit_code, 0);
        // Loop executed successfully within limits
    }

    #[tokio::test]
    async fn test_bash_script_file_enforces_max_input_bytes() {
        let fs = Arc::new(InMemoryFs::new());
        let large_script = "echo x\n".repeat(64);
        fs.write_file(
            std::path::Path::new("/tmp/large.sh"),
            large_script.as_bytes(),
        )
        .await
        .unwrap();

        let limits = ExecutionLimits::new().max_input_bytes(64);
        let mut interpreter = Interpreter::new(fs.clone());
        interpreter.set_limits(limits);
        let ast = Parser::new("bash /tmp/large.sh").parse().unwrap();
        let result = interpreter.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("input exceeds maximum size"));
    }

    #[tokio::test]
    async fn test_bash_c_injection_safe() {
        // Variable expansion doesn't allow injection
        let result = run_script("INJECT='; rm -rf /'; bash -c 'echo safe'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "safe");
    }

    #[tokio::test]
    async fn test_bash_version_no_host_info() {
        // Version output doesn't leak host information
        let result = run_script("bash --version").await;
        assert!(!result.stdout.contains("/usr"));
        assert!(!result.stdout.contains("GNU"));
        // Should only contain virtual version info
    }

    // Additional positive tests

    #[tokio::test]
    async fn test_bash_c_with_quotes() {
        // Handles quoted strings correctly
        let result = run_script(r#"bash -c 'echo "hello world"'"#).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "hello world");
    }

    #[tokio::test]
    async fn test_bash_c_with_variables() {
        // Only *exported* variables are visible inside `bash -c` — a plain
        // assignment in the parent is not inherited (real-bash semantics, #1777).
        let unexported = run_script("X=test; bash -c 'echo \"[$X]\"'").await;
        assert_eq!(unexported.exit_code, 0);
        assert_eq!(unexported.stdout.trim(), "[]");

        let exported = run_script("export X=test; bash -c 'echo $X'").await;
        assert_eq!(exported.exit_code, 0);
        assert_eq!(exported.stdout.trim(), "test");
    }

    #[tokio::test]
    async fn test_bash_c_pipe_in_command() {
        // Pipes work inside bash -c
        let result = run_script("bash -c 'echo hello | cat'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_bash_c_subshell() {
        // Command substitution works in bash -c
        let result = run_script("bash -c 'echo $(echo inner)'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "inner");
    }

    #[tokio::test]
    async fn test_bash_c_conditional() {
        // Conditionals work in bash -c
        let result = run_script("bash -c 'if true; then echo yes; fi'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "yes");
    }

    #[tokio::test]
    async fn test_bash_script_with_shebang() {
        // Script with shebang is handled (shebang line ignored)
        let fs = Arc::new(InMemoryFs::new());
        fs.write_file(
            std::path::Path::new("/tmp/shebang.sh"),
            b"#!/bin/bash\necho works",
        )
        .await
        .unwrap();

        let mut interpreter = Interpreter::new(fs.clone());
        let parser = Parser::new("bash /tmp/shebang.sh");
        let script = parser.parse().unwrap();
        let result = interpreter.execute(&script).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "works");
    }

    #[tokio::test]
    async fn test_bash_n_with_valid_multiline() {
        // -n validates multiline scripts
        let result = run_script("bash -n -c 'echo one\necho two\necho three'").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_sh_behaves_like_bash() {
        // sh and bash produce same results
        let bash_result = run_script("bash -c 'echo $((1+2))'").await;
        let sh_result = run_script("sh -c 'echo $((1+2))'").await;
        assert_eq!(bash_result.stdout, sh_result.stdout);
        assert_eq!(bash_result.exit_code, sh_result.exit_code);
    }

    // Additional negative tests

    #[tokio::test]
    async fn test_bash_n_unclosed_if() {
        // -n catches unclosed control structures
        let result = run_script("bash -n -c 'if true; then echo x'").await;
        assert_eq!(result.exit_code, 2);
        assert!(result.stderr.contains("syntax error"));
    }

    #[tokio::test]
    async fn test_bash_n_unclosed_while() {
        // -n catches unclosed while
        let result = run_script("bash -n -c 'while true; do echo x'").await;
        assert_eq!(result.exit_code, 2);
    }

    #[tokio::test]
    async fn test_bash_empty_c_string() {
        // Empty -c string is valid (does nothing)
        let result = run_script("bash -c ''").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "");
    }

    #[tokio::test]
    async fn test_bash_whitespace_only_c_string() {
        // Whitespace-only -c string is valid
        let result = run_script("bash -c '   '").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_bash_directory_not_file() {
        // Trying to execute a directory fails
        let result = run_script("bash /tmp").await;
        // Should fail - /tmp is a directory
        assert_ne!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_bash_c_exit_propagates() {
        // Exit code from bash -c is captured in $?
        let result = run_script("bash -c 'exit 42'; echo \"code: $?\"").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("code: 42"));
    }

    #[tokio::test]
    async fn test_bash_multiple_scripts_sequential() {
        // Multiple bash calls work sequentially
        let result = run_script("bash -c 'echo 1'; bash -c 'echo 2'; bash -c 'echo 3'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "1\n2\n3\n");
    }

    // Security edge cases

    #[tokio::test]
    async fn test_bash_c_path_traversal_blocked() {
        // Path traversal in bash -c doesn't escape sandbox
        let result =
            run_script("bash -c 'cat /../../etc/passwd 2>/dev/null || echo blocked'").await;
        assert!(result.stdout.contains("blocked") || result.exit_code != 0);
    }

    #[tokio::test]
    async fn test_bash_nested_deeply() {
        // Deeply nested bash calls work within limits
        let result = run_script("bash -c \"bash -c 'bash -c \\\"echo deep\\\"'\"").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "deep");
    }

    #[tokio::test]
    async fn test_bash_c_special_chars() {
        // Special characters in commands handled safely
        let result = run_script("bash -c 'echo \"$HOME\"'").await;
        // Should use virtual home directory, not real system path
        assert!(!result.stdout.contains("/root"));
        assert!(result.stdout.contains("/home/sandbox"));
    }

    #[tokio::test]
    async fn test_bash_c_dollar_substitution() {
        // $() substitution works in bash -c
        let result = run_script("bash -c 'echo $(echo subst)'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "subst");
    }

    #[tokio::test]
    async fn test_bash_help_contains_expected_options() {
        // Help output contains documented options
        let result = run_script("bash --help").await;
        assert!(result.stdout.contains("-c"));
        assert!(result.stdout.contains("-n"));
        assert!(result.stdout.contains("--version"));
    }

    #[tokio::test]
    async fn test_bash_c_array_operations() {
        // Array operations work in bash -c
        let result = run_script("bash -c 'arr=(a b c); echo ${arr[1]}'").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "b");
    }

    #[tokio::test]
    async fn test_bash_positional_special_vars() {
        // Special positional vars work
        let result = run_script("bash -c 'echo \"args: $#, first: $1, all: $*\"' prog a b c").await;
        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("args: 3"));
        assert!(result.stdout.contains("first: a"));
        assert!(result.stdout.contains("all: a b c"));
    }

    #[tokio::test]
    async fn test_xtrace_basic() {
        // set -x sends trace to stderr
        let result = run_script("set -x; echo hello").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "hello\n");
        assert!(
            result.stderr.contains("+ echo hello"),
            "stderr should contain xtrace: {:?}",
            result.stderr
        );
    }

    #[tokio::test]
    async fn test_xtrace_multiple_commands() {
        let result = run_script("set -x; echo one; echo two").await;
        assert_eq!(result.stdout, "one\ntwo\n");
        assert!(result.stderr.contains("+ echo one"));
        assert!(result.stderr.contains("+ echo two"));
    }

    #[tokio::test]
    async fn test_xtrace_expanded_variables() {
        // Trace shows expanded values, not variable names
        let result = run_script("x=hello; set -x; echo $x").await;
        assert_eq!(result.stdout, "hello\n");
        assert!(
            result.stderr.contains("+ echo hello"),
            "xtrace should show expanded value: {:?}",
            result.stderr
        );
    }

    #[tokio::test]
    async fn test_xtrace_disable() {
        // set +x disables tracing; set +x itself is traced
        let result = run_script("set -x; echo traced; set +x; echo not_traced").await;
        assert_eq!(result.stdout, "traced\nnot_traced\n");
        assert!(result.stderr.contains("+ echo traced"));
        assert!(
            result.stderr.contains("+ set +x"),
            "set +x should be traced: {:?}",
            result.stderr
        );
        assert!(
            !result.stderr.contains("+ echo not_traced"),
            "echo after set +x should NOT be traced: {:?}",
            result.stderr
        );
    }

    #[tokio::test]
    async fn test_xtrace_no_trace_without_flag() {
        let result = run_script("echo hello").await;
        assert_eq!(result.stdout, "hello\n");
        assert!(
            result.stderr.is_empty(),
            "no xtrace without set -x: {:?}",
            result.stderr
        );
    }

    #[tokio::test]
    async fn test_xtrace_not_captured_by_redirect() {
        // 2>&1 should NOT capture xtrace (matches real bash behavior)
        let result = run_script("set -x; echo hello 2>&1").await;
        assert_eq!(result.stdout, "hello\n");
        assert!(
            result.stderr.contains("+ echo hello"),
            "xtrace should stay in stderr even with 2>&1: {:?}",
            result.stderr
        );
    }

    // ==================== xargs execution tests ====================

    #[tokio::test]
    async fn test_xargs_executes_command() {
        // xargs should execute the command, not echo it
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/workspace"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/file.txt"), b"hello world")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        let parser = Parser::new("echo /workspace/file.txt | xargs cat");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(
            result.stdout.trim(),
            "hello world",
            "xargs should execute cat, not echo it. Got: {:?}",
            result.stdout
        );
    }

    #[tokio::test]
    async fn test_xargs_default_echo() {
        // With no command, xargs defaults to echo
        let result = run_script("echo 'a b c' | xargs").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "a b c");
    }

    #[tokio::test]
    async fn test_xargs_splits_newlines() {
        // xargs should split input on whitespace/newlines into separate args
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/workspace"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/a.txt"), b"AAA")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/b.txt"), b"BBB")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        let script = "printf '/workspace/a.txt\\n/workspace/b.txt' | xargs cat";
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert!(
            result.stdout.contains("AAA"),
            "should contain contents of a.txt"
        );
        assert!(
            result.stdout.contains("BBB"),
            "should contain contents of b.txt"
        );
    }

    #[tokio::test]
    async fn test_xargs_n1_executes_per_item() {
        // xargs -n 1 should execute once per argument
        let result = run_script("echo 'a b c' | xargs -n 1 echo item:").await;
        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.trim().lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "item: a");
        assert_eq!(lines[1], "item: b");
        assert_eq!(lines[2], "item: c");
    }

    #[tokio::test]
    async fn test_xargs_replace_str() {
        // xargs -I {} should substitute {} with each input line
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/workspace"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/hello.txt"), b"Hello!")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        let script = "echo /workspace/hello.txt | xargs -I {} cat {}";
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "Hello!");
    }

    #[tokio::test]
    async fn test_xargs_treats_stdin_as_literal_args() {
        // xargs should not glob-expand stdin-derived arguments.
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/workspace"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/a.txt"), b"A")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/workspace/b.txt"), b"B")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/workspace"));

        let parser = Parser::new("printf '*\\n' | xargs -I {} echo {}");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "*");
    }

    // ==================== find -exec tests ====================

    #[tokio::test]
    async fn test_find_exec_per_file() {
        // find -exec cmd {} \; should execute cmd for each matched file
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/project"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/project/a.txt"), b"content-a")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/project/b.txt"), b"content-b")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /project -name "*.txt" -exec echo {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.trim().lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(result.stdout.contains("/project/a.txt"));
        assert!(result.stdout.contains("/project/b.txt"));
    }

    #[tokio::test]
    async fn test_find_exec_batch_mode() {
        // find -exec cmd {} + should execute cmd once with all matched paths
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/project"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/project/a.txt"), b"aaa")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/project/b.txt"), b"bbb")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /project -name "*.txt" -exec echo {} +"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        // Should be a single line with both paths
        let lines: Vec<&str> = result.stdout.trim().lines().collect();
        assert_eq!(lines.len(), 1);
        assert!(result.stdout.contains("/project/a.txt"));
        assert!(result.stdout.contains("/project/b.txt"));
    }

    #[tokio::test]
    async fn test_find_exec_cat_reads_files() {
        // find -exec cat {} \; should actually read file contents
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/data"), true).await.unwrap();
        fs.write_file(std::path::Path::new("/data/hello.txt"), b"Hello World")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /data -name "hello.txt" -exec cat {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "Hello World");
    }

    #[tokio::test]
    async fn test_find_exec_with_type_filter() {
        // find -type f -exec should only process files
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/root/subdir"), true)
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/root/file.txt"), b"data")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /root -type f -exec echo found {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert!(result.stdout.contains("found /root/file.txt"));
        assert!(!result.stdout.contains("found /root/subdir"));
    }

    #[tokio::test]
    async fn test_find_exec_nonexistent_path() {
        let fs = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /nonexistent -exec echo {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 1);
        assert!(result.stderr.contains("No such file or directory"));
    }

    #[tokio::test]
    async fn test_find_exec_no_matches() {
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/empty"), true)
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /empty -name "*.xyz" -exec echo {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "");
    }

    #[tokio::test]
    async fn test_find_exec_multiple_placeholder() {
        // {} can appear multiple times in the command template
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/src"), true).await.unwrap();
        fs.write_file(std::path::Path::new("/src/test.txt"), b"hi")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /src -name "test.txt" -exec echo {} {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "/src/test.txt /src/test.txt");
    }

    #[tokio::test]
    async fn test_find_exec_preserves_literal_braces_in_path() {
        // Matched path must not undergo brace expansion when substituted into -exec args.
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(std::path::Path::new("/src"), true).await.unwrap();
        fs.write_file(std::path::Path::new("/src/{a,b}.txt"), b"literal")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/src/a.txt"), b"a")
            .await
            .unwrap();
        fs.write_file(std::path::Path::new("/src/b.txt"), b"b")
            .await
            .unwrap();

        let mut interp = Interpreter::new(fs.clone());
        interp.set_cwd(std::path::PathBuf::from("/"));

        let script = r#"find /src -name "{a,b}.txt" -exec echo {} \;"#;
        let parser = Parser::new(script);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();

        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "/src/{a,b}.txt");
    }

    #[tokio::test]
    async fn test_star_join_with_ifs() {
        // "$*" joins with IFS first char; empty IFS = no separator
        let result = run_script("set -- x y z\nIFS=:\necho \"$*\"").await;
        assert_eq!(result.stdout, "x:y:z\n");
        let result = run_script("set -- x y z\nIFS=\necho \"$*\"").await;
        assert_eq!(result.stdout, "xyz\n");
        // echo ["$*"] — brackets are literal, quotes are stripped
        let result = run_script("set -- x y z\necho [\"$*\"]").await;
        assert_eq!(result.stdout, "[x y z]\n");
        // "$*" in assignment
        let result = run_script("IFS=:\nset -- x 'y z'\ns=\"$*\"\necho \"star=$s\"").await;
        assert_eq!(result.stdout, "star=x:y z\n");
        // set a b c (without --)
        let result = run_script("set a b c\necho $#\necho $1 $2 $3").await;
        assert_eq!(result.stdout, "3\na b c\n");
    }

    #[tokio::test]
    async fn test_arithmetic_exponent_negative_no_panic() {
        // bash: "exponent less than 0" aborts the line with status 1
        let result = run_script("echo $(( 2 ** -1 ))").await;
        assert_eq!(result.exit_code, 1);
        assert!(result.stderr.contains("exponent less than 0"));
    }

    #[tokio::test]
    async fn test_arithmetic_exponent_large_no_panic() {
        let result = run_script("echo $(( 2 ** 100 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_shift_large_no_panic() {
        let result = run_script("echo $(( 1 << 64 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_shift_negative_no_panic() {
        let result = run_script("echo $(( 1 << -1 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_div_min_neg1_no_panic() {
        let result = run_script("echo $(( -9223372036854775808 / -1 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_mod_min_neg1_no_panic() {
        let result = run_script("echo $(( -9223372036854775808 % -1 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_overflow_add_no_panic() {
        let result = run_script("echo $(( 9223372036854775807 + 1 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_arithmetic_overflow_mul_no_panic() {
        let result = run_script("echo $(( 9223372036854775807 * 2 ))").await;
        assert_eq!(result.exit_code, 0);
    }

    /// Regression test for fuzz crash: base > 36 in arithmetic
    /// (crash-802347e7f64e6cb69da447b343e4f16081ffe48d)
    #[tokio::test]
    async fn test_arithmetic_base_gt_36_no_panic() {
        let result = run_script("echo $(( 64#A ))").await;
        assert_eq!(result.exit_code, 0);
        // 64#A = 36 (A is position 36 in the extended charset)
        assert_eq!(result.stdout.trim(), "36");
    }

    #[tokio::test]
    async fn test_arithmetic_base_gt_36_special_chars() {
        // @ = 62, _ = 63 in bash base-64 encoding
        let result = run_script("echo $(( 64#@ ))").await;
        assert_eq!(result.stdout.trim(), "62");
        let result = run_script("echo $(( 64#_ ))").await;
        assert_eq!(result.stdout.trim(), "63");
    }

    #[tokio::test]
    async fn test_arithmetic_base_gt_36_invalid_digit() {
        // bash: base > 64 is an invalid arithmetic base, the line aborts
        let result = run_script("echo $(( 37#! ))").await;
        assert_eq!(result.exit_code, 1);
        assert!(result.stdout.is_empty());
    }

    #[tokio::test]
    async fn test_arithmetic_base_suffix_pattern_with_double_percent() {
        let result = run_script("var='123foo%%bar'; echo $(( 10#${var%foo%%bar} ))").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "123");
    }

    #[tokio::test]
    async fn test_arithmetic_base_prefix_pattern_with_double_hash() {
        let result = run_script("var='foo##bar123'; echo $(( 10#${var#foo##bar} ))").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "123");
    }

    #[tokio::test]
    async fn test_arithmetic_nested_array_index_depth_guard() {
        let mut expr = "1".to_string();
        for _ in 0..(Interpreter::MAX_ARITHMETIC_DEPTH + 10) {
            expr = format!("arr[{expr}]");
        }
        let script = format!("arr[0]=0; arr[1]=1; echo $(({expr}))");
        let result = run_script(&script).await;
        // bash: "expression recursion level exceeded", status 1, no panic
        assert_eq!(result.exit_code, 1);
        assert!(result.stderr.contains("recursion level exceeded"));
    }

    #[tokio::test]
    async fn test_arithmetic_self_referential_expression_is_bounded() {
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            run_script("a='a+a'; echo $((a))"),
        )
        .await
        .expect("self-referential arithmetic expression should be bounded");

        // bash reports "expression recursion level exceeded" (status 1)
        assert_eq!(result.exit_code, 1);
    }

    #[tokio::test]
    async fn test_arithmetic_self_referential_array_index_is_bounded() {
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            run_script("arr[0]=1; i='arr[i]'; echo $((arr[i]))"),
        )
        .await
        .expect("self-referential arithmetic array index should be bounded");

        // bash reports "expression recursion level exceeded" (status 1)
        assert_eq!(result.exit_code, 1);
    }

    #[tokio::test]
    async fn test_eval_respects_parser_limits() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.limits.max_ast_depth = 5;
        let parser = Parser::new("eval 'echo hello'");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.exit_code, 0);
    }

    #[tokio::test]
    async fn test_source_respects_parser_limits() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        fs.write_file(std::path::Path::new("/tmp/test.sh"), b"echo sourced")
            .await
            .unwrap();
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.limits.max_ast_depth = 5;
        let parser = Parser::new("source /tmp/test.sh");
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "sourced");
    }

    #[tokio::test]
    async fn test_eval_respects_max_input_bytes() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.limits.max_input_bytes = 8;
        let parser = Parser::new("eval 'echo 123456789'");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(
            err.to_string().contains("input too large"),
            "unexpected error: {err}"
        );
    }

    #[tokio::test]
    async fn test_source_respects_max_input_bytes() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        fs.write_file(
            std::path::Path::new("/tmp/large-source.sh"),
            b"echo 123456789",
        )
        .await
        .unwrap();
        let mut interp = Interpreter::new(Arc::clone(&fs));
        interp.limits.max_input_bytes = 8;
        let parser = Parser::new("source /tmp/large-source.sh");
        let ast = parser.parse().unwrap();
        let err = interp.execute(&ast).await.unwrap_err();
        assert!(
            err.to_string().contains("input too large"),
            "unexpected error: {err}"
        );
    }

    #[tokio::test]
    async fn test_internal_var_prefix_not_exposed() {
        // ${!_NAMEREF*} must not expose internal markers
        let result = run_script("echo \"${!_NAMEREF*}\"").await;
        assert_eq!(result.stdout.trim(), "");
    }

    #[tokio::test]
    async fn test_internal_var_readonly_not_exposed() {
        let result = run_script("echo \"${!_READONLY*}\"").await;
        assert_eq!(result.stdout.trim(), "");
    }

    #[tokio::test]
    async fn test_internal_var_assignment_blocked() {
        // Direct assignment to _NAMEREF_ prefix should be silently ignored
        let result = run_script("_NAMEREF_x=PATH; echo ${!x}").await;
        assert!(!result.stdout.contains("/usr"));
    }

    #[tokio::test]
    async fn test_internal_var_readonly_injection_blocked() {
        // Should not be able to fake readonly
        let result = run_script("_READONLY_myvar=1; myvar=hello; echo $myvar").await;
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_extglob_utf8_no_panic() {
        let result =
            run_script(r#"shopt -s extglob; v="é"; [[ "$v" == +(a) ]] && echo yes || echo no"#)
                .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "no");
    }

    #[tokio::test]
    async fn test_extglob_no_hang() {
        use crate::time_compat::Instant;
        use std::time::Duration;
        let start = Instant::now();
        let result = run_script(
            r#"shopt -s extglob; [[ "aaaaaaaaaaaa" == +(a|aa) ]] && echo yes || echo no"#,
        )
        .await;
        let elapsed = start.elapsed();
        assert!(
            elapsed < Duration::from_secs(5),
            "extglob took too long: {:?}",
            elapsed
        );
        assert_eq!(result.exit_code, 0);
    }

    /// THREAT[TM-DOS-031]: `[[ == ]]` understands extglob without `shopt`,
    /// so backtracking alternation against a near-miss value must stay
    /// bounded by the per-match step budget.
    #[tokio::test]
    async fn test_cond_extglob_backtracking_is_bounded() {
        use crate::time_compat::Instant;
        use std::time::Duration;
        let start = Instant::now();
        let result = run_script(
            r#"x=$(printf 'a%.0s' {1..60})b
[[ $x == +(a|aa) ]] && echo m1 || echo n1
[[ $x == +(+(a)|+(aa)) ]] && echo m2 || echo n2
[[ $x == *(a|aa|aaa)*(a|aa)!(z) ]] && echo m3 || echo n3
y=${x//+(a|aa)/-}; echo ${#y}"#,
        )
        .await;
        let elapsed = start.elapsed();
        assert!(
            elapsed < Duration::from_secs(10),
            "extglob took too long: {:?}",
            elapsed
        );
        assert!(result.stdout.starts_with("n1\nn2\n"), "{}", result.stdout);
    }

    // Issue #425: $$ should not leak real host PID
    #[tokio::test]
    async fn test_dollar_dollar_no_host_pid_leak() {
        let mut bash = crate::Bash::new();
        let result = bash.exec("echo $$").await.unwrap();
        let pid: u32 = result.stdout.trim().parse().unwrap();
        // Should be sandboxed value (1), not real PID
        assert_eq!(pid, 1, "$$ should return sandboxed PID, not real host PID");
    }

    // Issue #426: cyclic nameref should not resolve to wrong variable
    #[tokio::test]
    async fn test_cyclic_nameref_detected() {
        let mut bash = crate::Bash::new();
        // Create cycle: a -> b -> a
        let result = bash
            .exec("declare -n a=b; declare -n b=a; a=hello; echo $a")
            .await
            .unwrap();
        // With the bug, this would silently resolve to an arbitrary variable.
        // As in bash, assigning through the cycle warns and abandons the line.
        assert_eq!(result.exit_code, 1);
        assert!(result.stderr.contains("circular name reference"));
        assert_eq!(result.stdout, "");
    }

    // Issue #437: arithmetic expansion byte/char index mismatch
    #[tokio::test]
    async fn test_arithmetic_compound_assign_ascii() {
        let mut bash = crate::Bash::new();
        let result = bash.exec("x=10; (( x += 5 )); echo $x").await.unwrap();
        assert_eq!(result.stdout.trim(), "15");
    }

    #[tokio::test]
    async fn test_getopts_while_loop() {
        // Issue #397: getopts in while loop should iterate over all options
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(
                r#"
set -- -f json -v
while getopts "f:vh" opt; do
  case "$opt" in
    f) FORMAT="$OPTARG" ;;
    v) VERBOSE=1 ;;
  esac
done
echo "FORMAT=$FORMAT VERBOSE=$VERBOSE"
"#,
            )
            .await
            .unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "FORMAT=json VERBOSE=1");
    }

    #[tokio::test]
    async fn test_getopts_script_with_args() {
        // Issue #397: getopts via bash -c with script args
        let mut bash = crate::Bash::new();
        // Write a script that uses getopts, then invoke it with arguments
        let result = bash
            .exec(
                r#"
cat > /tmp/test_getopts.sh << 'SCRIPT'
while getopts "f:vh" opt; do
  case "$opt" in
    f) FORMAT="$OPTARG" ;;
    v) VERBOSE=1 ;;
  esac
done
echo "FORMAT=$FORMAT VERBOSE=$VERBOSE"
SCRIPT
bash /tmp/test_getopts.sh -f json -v
"#,
            )
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "FORMAT=json VERBOSE=1");
    }

    #[tokio::test]
    async fn test_getopts_bash_c_with_args() {
        // Issue #397: getopts via bash -c 'script' -- args
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(
                r#"bash -c '
FORMAT="csv"
VERBOSE=0
while getopts "f:vh" opt; do
    case "$opt" in
        f) FORMAT="$OPTARG" ;;
        v) VERBOSE=1 ;;
    esac
done
echo "FORMAT=$FORMAT VERBOSE=$VERBOSE"
' -- -f json -v"#,
            )
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "FORMAT=json VERBOSE=1");
    }

    #[tokio::test]
    async fn test_getopts_optind_reset_between_scripts() {
        // Issue #397: OPTIND persists across bash script invocations, causing
        // getopts to skip all options on the second run
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(
                r#"
cat > /tmp/opts.sh << 'SCRIPT'
FORMAT="csv"
VERBOSE=0
while getopts "f:vh" opt; do
    case "$opt" in
        f) FORMAT="$OPTARG" ;;
        v) VERBOSE=1 ;;
    esac
done
echo "FORMAT=$FORMAT VERBOSE=$VERBOSE"
SCRIPT
bash /tmp/opts.sh -f json -v
bash /tmp/opts.sh -f xml -v
"#,
            )
            .await
            .unwrap();
        let lines: Vec<&str> = result.stdout.trim().lines().collect();
        assert_eq!(lines.len(), 2, "expected 2 lines: {}", result.stdout);
        assert_eq!(lines[0], "FORMAT=json VERBOSE=1");
        assert_eq!(lines[1], "FORMAT=xml VERBOSE=1");
    }

    #[tokio::test]
    async fn test_getopts_cluster_cursor_reset_between_top_level_execs() {
        let mut bash = crate::Bash::new();

        let first = bash
            .exec(r#"OPTIND=1; getopts "ab" opt -ab; echo "$opt""#)
            .await
            .unwrap();
        let second = bash
            .exec(r#"OPTIND=1; getopts "ab" opt -ab; echo "$opt""#)
            .await
            .unwrap();

        assert_eq!(first.stdout.trim(), "a");
        assert_eq!(second.stdout.trim(), "a");
    }

    #[tokio::test]
    async fn test_wc_l_in_pipe() {
        let mut bash = crate::Bash::new();
        let result = bash.exec(r#"echo -e "a\nb\nc" | wc -l"#).await.unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "3");
    }

    #[tokio::test]
    async fn test_wc_l_in_pipe_subst() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(
                r#"
cat > /tmp/data.csv << 'EOF'
name,score
alice,95
bob,87
carol,92
EOF
COUNT=$(tail -n +2 /tmp/data.csv | wc -l)
echo "count=$COUNT"
"#,
            )
            .await
            .unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "count=3");
    }

    #[tokio::test]
    async fn test_wc_l_counts_newlines() {
        let mut bash = crate::Bash::new();
        let result = bash.exec(r#"printf "a\nb\nc" | wc -l"#).await.unwrap();
        assert_eq!(result.stdout.trim(), "2");
    }

    #[tokio::test]
    async fn test_regex_match_from_variable() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(r#"re="200"; line="hello 200 world"; [[ $line =~ $re ]] && echo "match" || echo "no""#)
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "match");
    }

    #[tokio::test]
    async fn test_regex_match_literal() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(r#"line="hello 200 world"; [[ $line =~ 200 ]] && echo "match" || echo "no""#)
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "match");
    }

    #[test]
    fn repeated_conditional_regex_compiles_once() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(fs);

        for _ in 0..300_000 {
            assert!(interp.regex_match("bytes=123", "^bytes="));
        }

        assert_eq!(interp.regex_cache.compile_count(), 1);
    }

    #[tokio::test]
    async fn test_regex_single_quoted_pattern_is_literal() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(r#"re="200"; line="hello 200 world"; [[ $line =~ '$re' ]] && echo "match" || echo "no""#)
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "no");
    }

    #[tokio::test]
    async fn test_assoc_array_in_double_quotes() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(r#"declare -A arr; arr["foo"]="bar"; echo "value: ${arr["foo"]}""#)
            .await
            .unwrap();
        assert_eq!(result.stdout.trim(), "value: bar");
    }

    #[tokio::test]
    async fn test_assoc_array_keys_in_quotes() {
        let mut bash = crate::Bash::new();
        let result = bash
            .exec(r#"declare -A arr; arr["a"]=1; arr["b"]=2; echo "keys: ${!arr[@]}""#)
            .await
            .unwrap();
        let output = result.stdout.trim();
        assert!(output.starts_with("keys: "), "got: {}", output);
        assert!(output.contains("a"), "got: {}", output);
        assert!(output.contains("b"), "got: {}", output);
    }

    /// Issue #1277: glob `*` not expanded when adjacent to quoted variable expansion.
    /// In `"$var"*.ext`, the unquoted `*` must undergo glob expansion even though
    /// the word contains a quoted expansion (which suppresses IFS splitting).
    #[tokio::test]
    async fn test_glob_adjacent_to_quoted_variable() {
        let mut bash = crate::Bash::new();
        bash.fs()
            .mkdir(std::path::Path::new("/tmp/test"), true)
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/test/tag_hello.tmp.html"),
                b"hello",
            )
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/test/tag_world.tmp.html"),
                b"world",
            )
            .await
            .unwrap();

        // Test: ./"$p"*.tmp.html should expand the glob
        let result = bash
            .exec(r#"cd /tmp/test; p="tag_"; for f in ./"$p"*.tmp.html; do echo "$f"; done"#)
            .await
            .unwrap();
        let mut lines: Vec<&str> = result.stdout.trim().lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            vec!["./tag_hello.tmp.html", "./tag_world.tmp.html"],
            "glob * adjacent to quoted var should expand"
        );

        // Test: ls ./"$p"*.tmp.html should also work
        let result = bash
            .exec(r#"cd /tmp/test; p="tag_"; ls ./"$p"*.tmp.html"#)
            .await
            .unwrap();
        assert_eq!(result.exit_code, 0, "ls stderr: {}", result.stderr);
        assert!(
            result.stdout.contains("tag_hello.tmp.html"),
            "ls output: {}",
            result.stdout
        );
    }

    /// Quoted variable values must stay literal when an adjacent unquoted glob
    /// keeps pathname expansion enabled for the rest of the word.
    #[tokio::test]
    async fn test_quoted_variable_glob_chars_stay_literal_with_adjacent_glob() {
        let mut bash = crate::Bash::new();
        bash.fs()
            .mkdir(std::path::Path::new("/tmp/quoted_glob_literal"), true)
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/quoted_glob_literal/*literal.tmp"),
                b"literal",
            )
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/quoted_glob_literal/public.tmp"),
                b"public",
            )
            .await
            .unwrap();

        let result = bash
            .exec(r#"cd /tmp/quoted_glob_literal; p="*"; printf '%s\n' "$p"*.tmp"#)
            .await
            .unwrap();

        let mut lines: Vec<&str> = result.stdout.trim().lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            vec!["*literal.tmp"],
            "glob chars from quoted variable must remain literal; stderr: {}",
            result.stderr
        );
    }

    /// Braces introduced by quoted parameter expansion must not undergo brace
    /// expansion when an adjacent unquoted glob remains active.
    #[tokio::test]
    async fn test_quoted_variable_braces_stay_literal_with_adjacent_glob() {
        let mut bash = crate::Bash::new();
        bash.fs()
            .mkdir(std::path::Path::new("/tmp/quoted_brace_literal"), true)
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/quoted_brace_literal/{secret,public}x.txt"),
                b"literal",
            )
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/quoted_brace_literal/secret.txt"),
                b"secret",
            )
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/quoted_brace_literal/public.txt"),
                b"public",
            )
            .await
            .unwrap();

        let result = bash
            .exec(r#"cd /tmp/quoted_brace_literal; p="{secret,public}"; printf '%s\n' "$p"*.txt"#)
            .await
            .unwrap();

        let mut lines: Vec<&str> = result.stdout.trim().lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            vec!["{secret,public}x.txt"],
            "braces from quoted variable must remain literal; stderr: {}",
            result.stderr
        );
    }

    /// Issue #1333: glob `*` adjacent to quoted variable must also expand
    /// inside process substitution `<(...)`. The fix from #1287 applied at
    /// the top-level but not inside the subshell body of `<(cmd)`.
    #[tokio::test]
    async fn test_glob_adjacent_to_quoted_var_in_process_substitution() {
        let mut bash = crate::Bash::new();
        bash.fs()
            .mkdir(std::path::Path::new("/tmp/ps_glob"), true)
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/ps_glob/tag_foo.tmp.html"),
                b"foo",
            )
            .await
            .unwrap();
        bash.fs()
            .write_file(
                std::path::Path::new("/tmp/ps_glob/tag_bar.tmp.html"),
                b"bar",
            )
            .await
            .unwrap();

        // while-read over <(ls ./"$p"*.tmp.html) — real blocker case from bashblog.
        let result = bash
            .exec(
                r#"cd /tmp/ps_glob; p="tag_"; while read -r i; do echo "got:$i"; done < <(ls ./"$p"*.tmp.html)"#,
            )
            .await
            .unwrap();
        let mut lines: Vec<&str> = result.stdout.trim().lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            vec!["got:./tag_bar.tmp.html", "got:./tag_foo.tmp.html"],
            "glob * inside <(...) should expand; stderr: {}",
            result.stderr
        );
    }

    #[tokio::test]
    async fn test_glob_with_quoted_prefix() {
        let mut bash = crate::Bash::new();
        bash.fs()
            .mkdir(std::path::Path::new("/testdir"), true)
            .await
            .unwrap();
        bash.fs()
            .write_file(std::path::Path::new("/testdir/a.txt"), b"a")
            .await
            .unwrap();
        bash.fs()
            .write_file(std::path::Path::new("/testdir/b.txt"), b"b")
            .await
            .unwrap();
        let result = bash
            .exec(r#"DIR="/testdir"; for f in "$DIR"/*; do echo "$f"; done"#)
            .await
            .unwrap();
        let mut lines: Vec<&str> = result.stdout.trim().lines().collect();
        lines.sort();
        assert_eq!(lines, vec!["/testdir/a.txt", "/testdir/b.txt"]);
    }

    #[tokio::test]
    async fn test_mkfifo_creates_fifo_in_vfs() {
        let result = run_script("mkfifo /tmp/mypipe && test -p /tmp/mypipe && echo ok").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "ok");
    }

    #[tokio::test]
    async fn test_mkfifo_test_p_returns_true() {
        let result = run_script("mkfifo /tmp/mypipe && test -p /tmp/mypipe && echo yes").await;
        assert_eq!(result.stdout.trim(), "yes");
    }

    // /dev/urandom integration tests

    #[tokio::test]
    async fn test_od_dev_urandom() {
        let result = run_script("od -An -N8 -tx1 /dev/urandom").await;
        assert_eq!(result.exit_code, 0);
        // Should produce hex output - 8 bytes = 8 hex pairs
        let trimmed = result.stdout.trim();
        assert!(!trimmed.is_empty(), "od /dev/urandom should produce output");
    }

    #[tokio::test]
    async fn test_dev_urandom_read_succeeds() {
        // Reading /dev/urandom should succeed (not error with "file not found")
        let result = run_script("cat /dev/urandom > /dev/null && echo ok").await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "ok");
    }

    #[tokio::test]
    async fn test_dev_urandom_input_redirect() {
        // Input redirect from /dev/urandom should provide data to stdin
        let result = run_script("od -An -N4 -tx1 < /dev/urandom").await;
        assert_eq!(result.exit_code, 0);
        assert!(
            !result.stdout.trim().is_empty(),
            "should produce hex output"
        );
    }

    #[tokio::test]
    async fn test_dev_random_also_works() {
        let result = run_script("od -An -N4 -tx1 /dev/random").await;
        assert_eq!(result.exit_code, 0);
        assert!(!result.stdout.trim().is_empty());
    }

    // find -printf tests

    #[tokio::test]
    async fn test_find_printf_filename() {
        let result = run_script(
            r#"mkdir -p /tmp/fp1 && touch /tmp/fp1/hello.txt && find /tmp/fp1 -type f -printf '%f\n'"#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "hello.txt");
    }

    #[tokio::test]
    async fn test_find_printf_path() {
        let result = run_script(
            r#"mkdir -p /tmp/fp2 && touch /tmp/fp2/a.txt && find /tmp/fp2 -type f -printf '%p\n'"#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "/tmp/fp2/a.txt");
    }

    #[tokio::test]
    async fn test_find_printf_size() {
        let result = run_script(
            r#"mkdir -p /tmp/fp3 && echo -n "hello" > /tmp/fp3/five.txt && find /tmp/fp3 -type f -printf '%s\n'"#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "5");
    }

    #[tokio::test]
    async fn test_find_printf_type() {
        let result =
            run_script(r#"mkdir -p /tmp/fp4/sub && find /tmp/fp4 -maxdepth 0 -printf '%y\n'"#)
                .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "d");
    }

    #[tokio::test]
    async fn test_find_printf_combined() {
        let result = run_script(
            r#"mkdir -p /tmp/fp5 && touch /tmp/fp5/x.txt && find /tmp/fp5 -type f -printf '%f %y\n'"#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "x.txt f");
    }

    #[tokio::test]
    async fn test_posix_character_class_suffix_remove() {
        // ${x%%[![:space:]]*} should remove from first non-space to end
        let result = run_script(r#"x="  hello world  "; echo "[${x%%[![:space:]]*}]""#).await;
        assert_eq!(
            result.stdout.trim(),
            "[  ]",
            "%%[![:space:]]* should remove from first non-space to end"
        );
    }

    #[tokio::test]
    async fn test_posix_character_class_chained_trim() {
        // Issue #677: [![:space:]] character class in parameter expansion
        // Test the core fix: suffix removal with POSIX classes
        let result = run_script(r#"x="  hello world  "; echo "[${x%%[![:space:]]*}]""#).await;
        assert_eq!(
            result.stdout.trim(),
            "[  ]",
            "%%[![:space:]]* should remove from first non-space to end"
        );
        // Test digit class
        let result = run_script(r#"x="abc123def"; echo "${x%%[[:digit:]]*}""#).await;
        assert_eq!(result.stdout.trim(), "abc");
        // Test alpha class
        let result = run_script(r#"x="123abc"; echo "${x%%[[:alpha:]]*}""#).await;
        assert_eq!(result.stdout.trim(), "123");
    }

    #[tokio::test]
    async fn test_posix_digit_class_in_parameter_expansion() {
        let result = run_script(r#"x="abc123def"; echo "${x%%[[:digit:]]*}""#).await;
        assert_eq!(result.stdout.trim(), "abc");
    }

    #[tokio::test]
    async fn test_quoted_remove_prefix_operand_keeps_glob_literal() {
        // Quoted pattern operand must keep wildcard chars literal:
        // bash: val="axxxb"; pat="a*"; echo "${val#"$pat"}" => "axxxb"
        let result = run_script(r#"val="axxxb"; pat="a*"; echo "${val#"$pat"}""#).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "axxxb");
    }

    #[tokio::test]
    async fn test_mixed_remove_prefix_operand_keeps_unquoted_glob_active() {
        // Mixed operand: quoted var part literalized, unquoted * stays wildcard.
        let result = run_script(r#"val="axxxb"; pat="a"; echo "${val#"$pat"*}""#).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "xxxb");
    }

    #[test]
    fn test_operand_quote_mark_uses_bounded_fallible_candidates() {
        let operand: String = OPERAND_QUOTE_MARK_CANDIDATES.iter().collect();
        assert_eq!(Interpreter::operand_quote_mark(&operand), None);
    }

    #[test]
    fn test_parse_marked_operand_no_quotes_is_unforced() {
        // No double quotes: nothing to preserve, no marker, not forced (and the
        // bounded candidate search is skipped via the fast path).
        let (_, mark, forced) = Interpreter::parse_marked_operand("a*b", 128, 1_000_000);
        assert_eq!(mark, None);
        assert!(!forced);
    }

    #[test]
    fn test_parse_marked_operand_escaped_quotes_do_not_force_quoting() {
        // All marker candidates appear in the source (no safe marker), and the
        // only double quote is escaped, so there are no unescaped boundaries to
        // preserve: quoted handling must NOT be forced.
        let mut operand: String = OPERAND_QUOTE_MARK_CANDIDATES.iter().collect();
        operand.push_str(r#"\""#);
        let (_, mark, forced) = Interpreter::parse_marked_operand(&operand, 128, 1_000_000);
        assert_eq!(mark, None);
        assert!(!forced, "escaped quotes must not force quoted expansion");
    }

    #[tokio::test]
    async fn test_quoted_remove_prefix_operand_with_all_mark_candidates_keeps_glob_literal() {
        let candidate_chars: String = OPERAND_QUOTE_MARK_CANDIDATES.iter().collect();
        let script = format!(
            r#"val="axxxb"; pat="a*"; echo "${{val#${{unset+{}}}"$pat"}}""#,
            candidate_chars
        );
        let result = run_script(&script).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "axxxb");
    }

    #[tokio::test]
    async fn test_quoted_remove_prefix_operand_rejects_colliding_source_marker() {
        let quote_mark = OPERAND_QUOTE_MARK_CANDIDATES[0];
        let dead_candidates: String = OPERAND_QUOTE_MARK_CANDIDATES[1..].iter().collect();
        let script = format!(
            "val=\"axxxb\"; pat=\"a*\"; echo \"${{val#${{unset+{dead_candidates}}}{quote_mark}\\\"$pat\\\"{quote_mark}${{unset+\\\"\\\"}}}}\""
        );
        let result = run_script(&script).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "axxxb");
    }

    #[test]
    fn test_command_not_found_suggestions_use_stable_tie_break() {
        let msg = command_not_found_message("bash: ", "grpe", &["type", "true", "tree", "grep"]);
        assert_eq!(
            msg,
            "bash: grpe: command not found. Did you mean: grep, tree, true?\n"
        );
    }

    #[tokio::test]
    async fn test_debug_trap() {
        let result = run_script(
            r#"count=0; trap '((count++))' DEBUG; echo a; echo b; trap - DEBUG; echo $count"#,
        )
        .await;
        assert_eq!(result.stdout, "a\nb\n3\n");
    }

    #[tokio::test]
    async fn test_noclobber_prevents_overwrite() {
        let result = run_script(
            r#"echo first > /tmp/test_nc; set -o noclobber; echo second > /tmp/test_nc 2>/dev/null; echo $?; cat /tmp/test_nc"#,
        )
        .await;
        assert_eq!(result.stdout.trim(), "1\nfirst");
    }

    #[tokio::test]
    async fn test_indirect_expansion_array() {
        // Issue #672: ${!ref} should resolve to array's first element
        let result = run_script(r#"arr=(a b c); ref=arr; echo ${!ref}"#).await;
        assert_eq!(result.stdout.trim(), "a");
    }

    #[tokio::test]
    async fn test_indirect_expansion_with_default() {
        // Issue #937: ${!var:-default} should compose indirect + default
        let result =
            run_script(r#"name="TARGET"; TARGET="value"; echo "${!name:-fallback}""#).await;
        assert_eq!(result.stdout.trim(), "value");

        let result = run_script(r#"name="MISSING"; echo "${!name:-fallback}""#).await;
        assert_eq!(result.stdout.trim(), "fallback");

        let result = run_script(r#"name="EMPTY"; EMPTY=""; echo "${!name:-fallback}""#).await;
        assert_eq!(result.stdout.trim(), "fallback");

        let result = run_script(r#"name="UNSET"; echo "${!name:=assigned}""#).await;
        assert_eq!(result.stdout.trim(), "assigned");
    }

    #[tokio::test]
    async fn test_noclobber_clobber_override() {
        let result = run_script(
            r#"echo first > /tmp/test_nc2; set -o noclobber; echo second >| /tmp/test_nc2; echo $?; cat /tmp/test_nc2"#,
        )
        .await;
        assert_eq!(result.stdout.trim(), "0\nsecond");
    }

    #[tokio::test]
    async fn test_debug_trap_removal() {
        // After trap - DEBUG, the trap should no longer fire
        let result = run_script(
            r#"count=0; trap '((count++))' DEBUG; echo x; trap - DEBUG; echo y; echo $count"#,
        )
        .await;
        // DEBUG fires before: echo x (1), trap - DEBUG (2)
        // After removal: echo y, echo $count don't trigger
        assert_eq!(result.stdout, "x\ny\n2\n");
    }

    #[tokio::test]
    async fn test_debug_trap_no_recursive_amplification() {
        // THREAT[TM-DOS-035]: Commands inside the DEBUG trap handler must NOT
        // trigger further DEBUG trap invocations (prevents N*M amplification).
        let result = run_script(
            r#"trap_count=0; trap '((trap_count++))' DEBUG; echo a; echo b; echo c; trap - DEBUG; echo $trap_count"#,
        )
        .await;
        // DEBUG fires before: echo a (1), echo b (2), echo c (3), trap - DEBUG (4)
        // The ((trap_count++)) inside the trap must NOT fire another DEBUG trap.
        assert_eq!(result.stdout, "a\nb\nc\n4\n");
    }

    #[tokio::test]
    async fn test_array_join_with_ifs() {
        // Issue #668: ${arr[*]} should join with first char of IFS
        let result = run_script(r#"arr=(a b c); IFS=,; echo "${arr[*]}""#).await;
        assert_eq!(result.stdout.trim(), "a,b,c");
    }

    #[tokio::test]
    async fn test_array_join_with_ifs_at_sign() {
        // ${arr[@]} should NOT use IFS, keeps elements separate
        let result = run_script(r#"arr=(a b c); IFS=,; echo "${arr[@]}""#).await;
        assert_eq!(result.stdout.trim(), "a b c");
    }

    #[tokio::test]
    async fn test_ifs_nameref_to_star_does_not_recurse() {
        // THREAT[TM-DOS-036]: IFS may be a nameref to a special parameter.
        // Separator lookup must not recursively expand `$*` through IFS.
        let result =
            run_script(r#"f() { local -n IFS='*'; local arr=(a b c); echo "${arr[*]}"; }; f"#)
                .await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "a b c");
    }

    #[tokio::test]
    async fn test_ifs_nameref_to_regular_variable_array_join() {
        let result = run_script(
            r#"f() { local sep=:; local -n IFS=sep; local arr=(a b c); echo "${arr[*]}"; }; f"#,
        )
        .await;
        assert_eq!(result.stdout.trim(), "a:b:c");
    }

    #[tokio::test]
    async fn test_underscore_last_arg() {
        // Issue #668: $_ should track last argument of previous command
        let result = run_script("echo hello; echo $_").await;
        assert_eq!(result.stdout, "hello\nhello\n");
    }

    #[tokio::test]
    async fn test_underscore_no_args() {
        // $_ with no args should be the command name
        let result = run_script("true; echo $_").await;
        assert_eq!(result.stdout.trim(), "true");
    }

    #[tokio::test]
    async fn test_temp_assignment_expansion_order() {
        // Issue #671: args expanded before temporary prefix assignment
        let result = run_script(r#"x=hello; x=world echo $x"#).await;
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_process_sub_multiline() {
        // Issue #666: process substitution should handle multiline output
        let result = run_script(r#"cat <(echo hello; echo world)"#).await;
        assert_eq!(result.stdout, "hello\nworld\n");
    }

    #[tokio::test]
    async fn test_process_sub_echo_e() {
        // Issue #666: echo -e in process substitution
        let result = run_script(r#"cat <(echo -e "a\nb")"#).await;
        assert_eq!(result.stdout, "a\nb\n");
    }

    #[tokio::test]
    async fn test_process_sub_output() {
        // Issue #666: output process substitution >(cmd) forwards output
        let result = run_script(r#"echo hello > >(cat)"#).await;
        assert_eq!(result.stdout.trim(), "hello");
    }

    #[tokio::test]
    async fn test_process_sub_paste() {
        // Issue #666: paste with multiline process substitutions
        let result = run_script(r#"paste <(echo -e "a\nb") <(echo -e "1\n2")"#).await;
        assert_eq!(result.stdout, "a\t1\nb\t2\n");
    }

    #[tokio::test]
    async fn test_process_sub_conditional_bracket() {
        // [[ ]] inside process substitution must be preserved during token reconstruction
        let result = run_script(r#"cat <( [[ 1 = 1 ]] && echo MATCH )"#).await;
        assert_eq!(result.stdout.trim(), "MATCH");
    }

    #[tokio::test]
    async fn test_process_sub_while_break_with_condition() {
        // while+break with conditional inside process substitution
        let result =
            run_script(r#"cat <( x=1; while true; do [[ $x -eq 1 ]] && break; done; echo OK )"#)
                .await;
        assert_eq!(result.stdout.trim(), "OK");
    }

    #[tokio::test]
    async fn test_process_sub_arithmetic() {
        // (( )) inside process substitution must be preserved
        let result = run_script(r#"cat <( x=5; (( x > 3 )) && echo YES )"#).await;
        assert_eq!(result.stdout.trim(), "YES");
    }

    #[tokio::test]
    async fn test_output_process_sub_cleared_after_failglob_in_same_exec() {
        // failglob abandons the rest of its line, as in bash: VICTIM goes on
        // the next one.
        let result =
            run_script("shopt -s failglob; echo >(echo STALE) ./missing_*\necho VICTIM").await;
        assert!(
            !result.stdout.contains("STALE"),
            "deferred output process substitution leaked after failglob"
        );
        assert!(result.stdout.contains("VICTIM"));
    }

    #[tokio::test]
    async fn test_output_process_sub_cleared_between_bash_exec_calls() {
        let mut bash = crate::Bash::new();
        let first = bash
            .exec(r#"shopt -s failglob; echo >(cat /secret) ./missing_*"#)
            .await
            .unwrap();
        assert_eq!(first.exit_code, 1);

        let second = bash
            .exec("echo SECRET > /secret; echo VICTIM")
            .await
            .unwrap();
        assert_eq!(second.stdout, "VICTIM\n");
    }

    #[tokio::test]
    async fn test_stderr_redirect_devnull_simple_and_compound() {
        // Issue #1116: 2>/dev/null must suppress stderr from builtins
        let result = run_script("ls /nonexistent 2>/dev/null; echo exit:$?").await;
        assert_eq!(result.stderr, "", "simple: stderr should be suppressed");
        assert_eq!(result.stdout.trim(), "exit:2");

        // Compound command
        let result = run_script("{ ls /nonexistent; } 2>/dev/null; echo exit:$?").await;
        assert_eq!(result.stderr, "", "compound: stderr should be suppressed");
        assert_eq!(result.stdout.trim(), "exit:2");

        // &>/dev/null
        let result = run_script("ls /nonexistent &>/dev/null; echo exit:$?").await;
        assert_eq!(result.stderr, "", "&>: stderr should be suppressed");
        assert_eq!(result.stdout.trim(), "exit:2");

        // failglob + redirect
        let result = run_script("shopt -s failglob; ls ./*.html 2>/dev/null; echo exit:$?").await;
        assert_eq!(result.stderr, "", "failglob: stderr should be suppressed");
    }

    #[tokio::test]
    async fn test_fd3_redirect_pattern() {
        // Issue #1115: { echo "progress" 1>&3; echo "file content"; } 3>&1 >file
        let result = run_script(
            r#"{ echo "progress" 1>&3; echo "file content"; } 3>&1 > /tmp/test_fd.txt
cat /tmp/test_fd.txt"#,
        )
        .await;
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(
            lines,
            vec!["progress", "file content"],
            "fd3 → stdout, fd1 → file"
        );
    }

    #[tokio::test]
    async fn test_fd3_pending_output_not_leaked_across_commands() {
        // Regression: pending fd3+ buffer must not leak into later unrelated mixed redirects.
        let result = run_script(
            r#"echo "secret" 1>&3
echo "public" 2>&1 > /tmp/test_fd_leak.txt
cat /tmp/test_fd_leak.txt"#,
        )
        .await;
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["public"]);
    }

    #[tokio::test]
    async fn test_fd3_pending_output_cleared_after_noclobber_error() {
        // Regression: failed outer fd-table redirects must not retain fd3+ data.
        let result = run_script(
            r#"echo existing > /tmp/test_fd_noclobber.txt
set -C
{ echo "secret" 1>&3; } 3>&1 > /tmp/test_fd_noclobber.txt
echo "public" 2>&1 > /tmp/test_fd_after_noclobber.txt
cat /tmp/test_fd_after_noclobber.txt"#,
        )
        .await;
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["public"]);
        assert!(!result.stdout.contains("secret"));
    }

    #[tokio::test]
    async fn test_fd3_pending_output_not_leaked_across_exec_calls() {
        // Regression: Bash::exec reset clears stale fd3+ buffers in reused interpreters.
        let mut bash = Bash::new();
        let first = bash
            .exec(
                r#"echo existing > /tmp/test_fd_exec_leak.txt
set -C
{ echo "secret" 1>&3; } 3>&1 > /tmp/test_fd_exec_leak.txt"#,
            )
            .await
            .unwrap();
        assert_eq!(first.exit_code, 1);

        let second = bash
            .exec(
                r#"echo "public" 2>&1 > /tmp/test_fd_exec_public.txt
cat /tmp/test_fd_exec_public.txt"#,
            )
            .await
            .unwrap();
        assert_eq!(second.stdout, "public\n");
        assert!(!second.stdout.contains("secret"));
    }

    // Regression: date +"$var" must not word-split format when var contains spaces
    // https://github.com/everruns/bashkit/issues/1203
    #[tokio::test]
    async fn test_date_format_var_with_spaces_no_split() {
        // Use -u -d @0 for deterministic output (1970-01-01 UTC)
        let result = run_script(r#"fmt="%Y %m %d"; date -u -d @0 +"$fmt""#).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "1970 01 01");
    }

    // Mixed-quoting: prefix"$var" must stay one word (no IFS split)
    #[tokio::test]
    async fn test_mixed_quote_prefix_var_no_split() {
        // prefix"$var" should produce one argument, not be split at spaces
        let result = run_script(r#"v="a b c"; echo prefix"$v""#).await;
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout.trim(), "prefixa b c");
    }

    // Mixed-quoting starting with quote: "$var"suffix must stay one word.
    #[tokio::test]
    async fn test_mixed_quote_starts_with_var_no_split() {
        let result = run_script(
            r#"v="a b c"; set -- "${v}"suffix; echo "count:$#"; echo "arg1:$1"; echo "arg2:${2:-<none>}""#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["count:1", "arg1:a b csuffix", "arg2:<none>"]);
    }

    // Regression: only unquoted expansion parts in mixed words undergo IFS splitting.
    #[tokio::test]
    async fn test_mixed_quote_unquoted_prefix_var_still_splits() {
        let result = run_script(
            r#"a="x y"; b="q r"; set -- $a"$b"; echo "count:$#"; echo "arg1:$1"; echo "arg2:$2""#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["count:2", "arg1:x", "arg2:yq r"]);
    }

    // Mixed-quoting: "$v"$u protects only the quoted segment; unquoted $u still splits.
    #[tokio::test]
    async fn test_mixed_quote_unquoted_suffix_var_splits() {
        let result = run_script(
            r#"v="x y"; u="a b"; set -- "$v"$u; echo "count:$#"; echo "arg1:$1"; echo "arg2:$2""#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["count:2", "arg1:x ya", "arg2:b"]);
    }

    // Regression: unquoted IFS delimiters in a mixed word separate adjacent
    // literal/quoted segments even when the expansion contributes no field text.
    #[tokio::test]
    async fn test_mixed_quote_unquoted_ifs_boundary_before_quoted_suffix() {
        let result = run_script(
            r#"a=" "; b="q"; set -- p$a"$b"; echo "count:$#"; echo "arg1:$1"; echo "arg2:$2""#,
        )
        .await;
        assert_eq!(result.exit_code, 0);
        let lines: Vec<&str> = result.stdout.lines().collect();
        assert_eq!(lines, vec!["count:2", "arg1:p", "arg2:q"]);
    }

    /// Fds left open (and VFS entries) after the commands ran.
    async fn proc_sub_leftovers(interp: &Interpreter, fs: &Arc<dyn FileSystem>) -> Vec<String> {
        let mut left: Vec<String> = Vec::new();
        if interp.proc_subs.open_count() != 0 {
            left.push(format!("{} open fds", interp.proc_subs.open_count()));
        }
        if let Ok(entries) = fs.read_dir(Path::new("/dev/fd")).await {
            left.extend(entries.into_iter().map(|e| e.name));
        }
        left
    }

    /// Issue #1184: input process substitutions close with their command.
    #[tokio::test]
    async fn test_proc_sub_input_cleanup() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));

        let parser = Parser::new(r#"for i in 1 2 3 4 5; do cat <(echo "hello $i"); done"#);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(proc_sub_leftovers(&interp, &fs).await, Vec::<String>::new());
    }

    /// Issue #1184: output process substitutions close with their command.
    #[tokio::test]
    async fn test_proc_sub_output_cleanup() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));

        let parser = Parser::new(r#"for i in 1 2 3; do echo "data $i" > >(cat); done"#);
        let ast = parser.parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.exit_code, 0);
        assert_eq!(result.stdout, "data 1\ndata 2\ndata 3\n");
        assert_eq!(proc_sub_leftovers(&interp, &fs).await, Vec::<String>::new());
    }

    /// Issue #1184: cleanup happens even when command fails
    #[tokio::test]
    async fn test_proc_sub_cleanup_on_failure() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut interp = Interpreter::new(Arc::clone(&fs));

        let parser = Parser::new(r#"cat <(echo "data") && false; true; cat <(echo x) /nope"#);
        let ast = parser.parse().unwrap();
        let _result = interp.execute(&ast).await.unwrap();
        assert_eq!(proc_sub_leftovers(&interp, &fs).await, Vec::<String>::new());
        // Words of a compound command stay open until the exec ends.
        let parser = Parser::new(r#"case <(true) in *) : ;; esac"#);
        let ast = parser.parse().unwrap();
        let _result = interp.execute(&ast).await.unwrap();
        interp.close_proc_sub_fds();
        assert_eq!(proc_sub_leftovers(&interp, &fs).await, Vec::<String>::new());
    }

    /// TM-ISO-028: a substitution is an fd of its own shell, never a file in
    /// the shared VFS another interpreter could read.
    #[tokio::test]
    async fn test_proc_sub_fd_is_private_to_its_interpreter() {
        let fs: Arc<dyn FileSystem> = Arc::new(InMemoryFs::new());
        let mut owner = Interpreter::new(Arc::clone(&fs));
        let other = Interpreter::new(Arc::clone(&fs));

        let parser = Parser::new(r#"f() { echo "$1"; cat "$1"; }; f <(echo data)"#);
        let ast = parser.parse().unwrap();
        let result = owner.execute(&ast).await.unwrap();
        assert_eq!(result.stdout, "/dev/fd/63\ndata\n");
        // While open in `owner`, the fd exists only there.
        owner
            .proc_subs
            .open(63, crate::fs::ProcSubData::test_input(b"secret"));
        assert_eq!(
            owner.fs.read_file(Path::new("/dev/fd/63")).await.unwrap(),
            b"secret"
        );
        assert!(other.fs.read_file(Path::new("/dev/fd/63")).await.is_err());
        assert!(
            other
                .fs
                .write_file(Path::new("/dev/fd/63"), b"x")
                .await
                .is_err()
        );
        assert!(!fs.exists(Path::new("/dev/fd/63")).await.unwrap());
    }

    /// Regression: all known internal prefixes must be caught by is_internal_variable().
    #[test]
    fn test_is_internal_variable_covers_all_prefixes() {
        let internal_names = [
            "_NAMEREF_foo",
            "_READONLY_bar",
            "_UPPER_x",
            "_LOWER_y",
            "_INTEGER_n",
            "_ARRAY_READ_a",
            "_SHIFT_COUNT",
            "_SET_POSITIONAL",
            "SHOPT_e",
            "SHOPT_x",
            "SHOPT_expand_aliases",
            "SHOPT_pipefail",
        ];
        for name in &internal_names {
            assert!(
                is_internal_variable(name),
                "is_internal_variable() should return true for {name}"
            );
        }

        // _TTY_ is user-configurable but hidden from output
        let hidden_only = ["_TTY_0", "_TTY_1"];
        for name in &hidden_only {
            assert!(
                !is_internal_variable(name),
                "_TTY_ should NOT be blocked by is_internal_variable(): {name}"
            );
            assert!(
                is_hidden_variable(name),
                "_TTY_ should be hidden by is_hidden_variable(): {name}"
            );
        }

        let regular_vars = ["HOME", "PATH", "USER", "MY_VAR", "foo", "_"];
        for name in &regular_vars {
            assert!(
                !is_internal_variable(name),
                "is_internal_variable() should return false for regular variable {name}"
            );
        }
    }

    #[tokio::test]
    async fn test_shell_state_restore_preserves_readonly_attrs() {
        let mut interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        let ast = Parser::new("readonly POLICY=safe").parse().unwrap();
        let result = interp.execute(&ast).await.unwrap();
        assert_eq!(result.exit_code, 0);

        let state = interp.shell_state();
        let mut restored = Interpreter::new(Arc::new(InMemoryFs::new()));
        restored.restore_shell_state(&state);

        // The refused assignment abandons its line (bash); the next runs.
        let assign = Parser::new("POLICY=unsafe\necho $POLICY").parse().unwrap();
        let out = restored.execute(&assign).await.unwrap();
        assert_eq!(out.exit_code, 0);
        assert!(out.stderr.contains("POLICY: readonly variable"));
        assert_eq!(out.stdout.trim(), "safe");
    }

    #[tokio::test]
    async fn test_shell_state_roundtrips_last_bg_pid() {
        let mut interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        let ast = Parser::new("true &").parse().unwrap();
        interp.execute(&ast).await.unwrap();
        let bang = interp.last_bg_pid.clone();
        assert!(bang.is_some(), "$! should be set after backgrounding");

        let state = interp.shell_state();
        assert_eq!(state.last_bg_pid, bang);

        let mut restored = Interpreter::new(Arc::new(InMemoryFs::new()));
        restored.restore_shell_state(&state);
        let echo = Parser::new("echo $!").parse().unwrap();
        let out = restored.execute(&echo).await.unwrap();
        assert_eq!(out.stdout.trim(), bang.unwrap());
    }

    #[tokio::test]
    async fn test_shell_state_roundtrips_dir_stack() {
        let fs = Arc::new(InMemoryFs::new());
        fs.mkdir(Path::new("/tmp"), true).await.unwrap();
        let mut interp = Interpreter::new(fs);
        let ast = Parser::new("cd /tmp; pushd /tmp >/dev/null")
            .parse()
            .unwrap();
        interp.execute(&ast).await.unwrap();
        assert_eq!(&*interp.scoped.dir_stack, &["/tmp".to_string()]);

        let state = interp.shell_state();
        assert_eq!(state.dir_stack, vec!["/tmp".to_string()]);

        let restored_fs = Arc::new(InMemoryFs::new());
        let mut restored = Interpreter::new(restored_fs);
        restored.restore_shell_state(&state);
        assert_eq!(&*restored.scoped.dir_stack, &["/tmp".to_string()]);
        let out = restored
            .execute(&Parser::new("dirs").parse().unwrap())
            .await
            .unwrap();
        assert!(out.stdout.contains("/tmp"));
    }

    #[test]
    fn test_restore_validation_rejects_oversized_dir_stack() {
        let mut state = Interpreter::new(Arc::new(InMemoryFs::new())).shell_state();
        state.dir_stack = vec!["/tmp".to_string(); crate::builtins::limits::DIRSTACK_MAX_SIZE + 1];

        let interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        assert!(
            interp.validate_shell_state_restore_limits(&state).is_err(),
            "restore must reject a dir_stack larger than pushd can create"
        );
    }

    #[test]
    fn test_restore_validation_rejects_oversized_dir_stack_entry() {
        let mut state = Interpreter::new(Arc::new(InMemoryFs::new())).shell_state();
        state.dir_stack = vec![format!(
            "/{}",
            "a".repeat(crate::builtins::limits::DIRSTACK_MAX_ENTRY_BYTES)
        )];

        let interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        assert!(
            interp.validate_shell_state_restore_limits(&state).is_err(),
            "restore must reject a dir_stack entry larger than path limits"
        );
    }

    #[tokio::test]
    async fn test_restore_shell_state_migrates_legacy_nameref_targets() {
        let state = ShellState {
            env: HashMap::new(),
            variables: HashMap::from([
                ("POLICY".to_string(), "safe".to_string()),
                ("_READONLY_POLICY".to_string(), String::new()),
                ("_NAMEREF_alias_var".to_string(), "POLICY".to_string()),
            ]),
            var_attrs: HashMap::new(),
            namerefs: HashMap::new(),
            arrays: HashMap::new(),
            assoc_arrays: HashMap::new(),
            cwd: PathBuf::from("/"),
            last_exit_code: 0,
            last_bg_pid: None,
            functions: HashMap::new(),
            aliases: HashMap::new(),
            traps: HashMap::new(),
            dir_stack: Vec::new(),
        };

        let mut restored = Interpreter::new(Arc::new(InMemoryFs::new()));
        restored.restore_shell_state(&state);

        assert_eq!(restored.resolve_nameref("alias_var"), "POLICY");
        assert!(!restored.scoped.variables.contains_key("_NAMEREF_alias_var"));

        let ast = Parser::new("alias_var=unsafe\necho $POLICY")
            .parse()
            .unwrap();
        let result = restored.execute(&ast).await.unwrap();
        assert_eq!(result.stdout.trim(), "safe");
        assert_eq!(
            restored.scoped.variables.get("POLICY").map(String::as_str),
            Some("safe")
        );
    }

    #[test]
    fn test_restore_shell_state_clears_stale_attrs_and_namerefs() {
        let mut interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        interp.add_var_attr("POLICY", VarAttrs::READONLY);
        interp.set_nameref("alias_var", "POLICY".to_string());

        let clean_state = ShellState {
            env: HashMap::new(),
            variables: HashMap::from([("POLICY".to_string(), "safe".to_string())]),
            var_attrs: HashMap::new(),
            namerefs: HashMap::new(),
            arrays: HashMap::new(),
            assoc_arrays: HashMap::new(),
            cwd: PathBuf::from("/"),
            last_exit_code: 0,
            last_bg_pid: None,
            functions: HashMap::new(),
            aliases: HashMap::new(),
            traps: HashMap::new(),
            dir_stack: Vec::new(),
        };

        interp.restore_shell_state(&clean_state);

        assert!(!interp.is_var_readonly("POLICY"));
        assert!(interp.resolve_nameref("alias_var").eq("alias_var"));
    }

    #[test]
    fn test_restore_shell_state_clears_stale_getopts_cursor() {
        let mut interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        interp.getopts_char_idx = 1;

        let clean_state = ShellState {
            env: HashMap::new(),
            variables: HashMap::new(),
            var_attrs: HashMap::new(),
            namerefs: HashMap::new(),
            arrays: HashMap::new(),
            assoc_arrays: HashMap::new(),
            cwd: PathBuf::from("/"),
            last_exit_code: 0,
            last_bg_pid: None,
            functions: HashMap::new(),
            aliases: HashMap::new(),
            traps: HashMap::new(),
            dir_stack: Vec::new(),
        };

        interp.restore_shell_state(&clean_state);

        assert_eq!(interp.getopts_char_idx, 0);
    }

    /// The builtins after which the flag and directory resyncs are skipped
    /// must write no variable and move no directory, whatever they are given.
    #[tokio::test]
    async fn builtins_that_skip_the_resync_write_no_variable() {
        let interp = Interpreter::new(Arc::new(InMemoryFs::new()));
        let arg_sets: [&[&str]; 8] = [
            &[],
            &["--help"],
            &["--version"],
            &["-n", "x"],
            &["-v", "HOME"],
            &["a", "=", "b", "]"],
            &["-e", "a\\c"],
            &["-d", "/", "-a", "-z", ""],
        ];
        for name in LEAVES_VARIABLES_ALONE {
            let builtin = Arc::clone(interp.builtins.get(name).expect("a bundled builtin"));
            for args in arg_sets {
                let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                let env = HashMap::new();
                let mut variables: HashMap<String, String> = [
                    ("HOME", "/home/u"),
                    ("SHOPT_e", "0"),
                    ("PWD", "/"),
                    ("x", "1"),
                ]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into();
                let before = variables.clone();
                let mut cwd = PathBuf::from("/");
                let ctx = builtins::Context::new_for_test(
                    &args,
                    &env,
                    &mut variables,
                    &mut cwd,
                    Arc::clone(&interp.fs),
                    None,
                );
                let _ = builtin.execute(ctx).await;
                assert_eq!(
                    variables,
                    before,
                    "`{name} {}` wrote a variable",
                    args.join(" ")
                );
                assert_eq!(cwd, PathBuf::from("/"), "`{name} {}` moved", args.join(" "));
            }
        }
    }
}

/// Bundled builtins that never write a shell variable (nor `PWD`), so the
/// flag and directory resyncs after a builtin can be skipped for them
/// (clix patch, "a builtin's fixed costs"): the usual body of a hot loop.
const LEAVES_VARIABLES_ALONE: [&str; 6] = [":", "true", "false", "echo", "test", "["];

fn leaves_variables_alone(name: &str) -> bool {
    LEAVES_VARIABLES_ALONE.contains(&name)
}
