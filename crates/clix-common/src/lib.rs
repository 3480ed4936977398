//! The rules that several crates must agree on, written once.
//!
//! A rule lives here only when at least two crates that do not depend on each
//! other need it, so neither could own it; everything else belongs to the crate
//! that owns the concept (the secret-store list, for one, is
//! `clix_workspace::SECRET_STORES`: the lowest crate that owns that idea).
//! Today:
//!
//! - the exit codes clix gives a line or a call ([`exit`]): 0 success, 1
//!   failure, 2 usage, 3 an agent stopped by a budget, sysexits 70, 75 and 78
//!   (a broken output contract, try later, a bad configuration), 124 time-out,
//!   126 cannot run, 127 not found, 128+N killed by signal N, 130 cancelled,
//!   141 broken pipe, 255 unreachable (ssh's), and -1 for no code (a cancelled
//!   call's audit line). The tidy test refuses an exit-code literal anywhere
//!   else, so a number means the same from a shell line to `clix ask`'s own
//!   exit;
//! - [`Secret`], the one type for keys and tokens in every crate's settings
//!   (Debug, Display and Serialize show `***`; `expose()` for the one place
//!   that sends it); [`is_secret_name`], the rule for which names hold one
//!   (`OPENAI_API_KEY`, `--token`), used by the sandbox's environment
//!   allowlist, clip's host children, the hub's parameters and the audit log's
//!   redaction; and [`redact_url`], a connection URL without its password;
//! - `redact_text` and `holds_secret`: the shapes of a secret in free text
//!   (known token prefixes, long high-entropy words, an `Authorization:`
//!   credential, a URL's password), for every audit record, trajectory, memory
//!   and log line that may hold what a model typed or read;
//! - [`names`]: which known name a mistyped one was meant to be (close *and*
//!   plausible: at most one edit per four characters typed, so `rename` never
//!   suggests `uname`), for every "did you mean", and `UnknownField`, the one
//!   way every reader refuses a field it does not know;
//! - [`settings`]: how a settings type reports a value it does not allow
//!   (`BadValue`, `Validate`), and the value rules several sections share;
//! - [`template`]: the one syntax of prompt files (`{name}` placeholders, `{{`
//!   for a literal brace, an unknown placeholder named with the near one);
//! - `shell_quote`: a word quoted for a POSIX shell;
//! - `timeout_line` and `short_duration`: the words of a time-out and of a
//!   duration, which Layer 2, a sandboxed stage and a `clip` call all write.
//!
//! It must not depend on any other clix crate, nor do anything: no I/O, no
//! state, only shared definitions and pure functions of their inputs.

mod digest;
pub mod names;
mod quote;
mod redact;
mod secret;
pub mod settings;
pub mod template;
mod wording;

pub use digest::{hex, sha256_hex, sha256_hex_prefix};
pub use quote::{shell_quote, shell_quote_into, shell_word};
pub use redact::{holds_secret, looks_like_token, redact_text};
pub use secret::{Secret, is_secret_name, redact_url};
pub use wording::{short_duration, timeout_line};

/// Exit codes, as bash and GNU tools use them where they have one, and
/// sysexits(3) for the hub's own refusals. Every crate's exit code is one of
/// these (the tidy test refuses a literal elsewhere), so a number means the
/// same from a line in the shell to `clix ask`'s own exit.
pub mod exit {
    /// No code: the call was dropped before its program ended (an audit
    /// line that says `cancelled`).
    pub const NO_CODE: i32 = -1;
    /// It worked.
    pub const SUCCESS: i32 = 0;
    /// It failed, with nothing more specific to say (the error says why).
    pub const FAILURE: i32 = 1;
    /// A bad command line: a missing or unknown flag or subcommand.
    pub const USAGE: i32 = 2;
    /// An agent stopped by one of its budgets (steps, tokens, wall time)
    /// before it answered: not a failure of its tools or model.
    pub const BUDGET: i32 = 3;
    /// A tool broke its output contract (EX_SOFTWARE).
    pub const BAD_OUTPUT: i32 = 70;
    /// A rate limit or a busy serialized tool: try again later (EX_TEMPFAIL).
    pub const TRY_LATER: i32 = 75;
    /// A configuration value is missing or wrong (EX_CONFIG).
    pub const CONFIG: i32 = 78;
    /// Killed by signal N, the code is this plus N, as a shell reports it.
    pub const SIGNALLED: i32 = 128;
    /// A time limit ended it, as GNU `timeout`.
    pub const TIMEOUT: i32 = 124;
    /// It exists but cannot be run, as bash's "cannot execute".
    pub const CANNOT_RUN: i32 = 126;
    /// No such command, as bash's "command not found".
    pub const NOT_FOUND: i32 = 127;
    /// Cancelled by the caller (128 + SIGINT).
    pub const CANCELLED: i32 = 130;
    /// Its reader closed the pipe it wrote to (128 + SIGPIPE), as `seq` or
    /// `cat` end in a shell.
    pub const BROKEN_PIPE: i32 = 141;
    /// The other machine could not be reached: ssh's own code for a failed
    /// connection, which clip gives every kind of environment.
    pub const UNREACHABLE: i32 = 255;
}
