//! Policy: which commands may run, decided on the command that is actually
//! about to run.
//!
//! Rules ([`RuleSpec`]: `allow` / `ask` / `deny`, matching a `match` prefix, a
//! `program`, a `redirect` or a `shape`, narrowed by `flags` in every GNU
//! spelling, by an `operand`'s kind (root, protected, device) or by
//! `args_regex`; each with its `why`, and examples and counterexamples checked
//! at load) come from clix's built-in defaults (one data file,
//! `defaults.toml`), the person's `[policy]` in `config.toml` and
//! `policy.toml`, and the workspace's `.clix/policy.toml` (which may only add
//! `deny` and `ask`: its `allow` rules are ignored). A [`Policy`] decides one
//! argv, looked through wrappers (`env`, `timeout`, `sudo`…), `xargs`, the
//! `-exec` of `find`, and literal `bash -c`/`eval` scripts, by the program's
//! basename; several matching rules give the strictest decision. A [`Gate`]
//! applies it to a session: the person's answers (`ask` put to an `Approver`,
//! "always" remembered per rule), `--allow` prefixes, the refusal text, the
//! audit events.
//!
//! The shell calls the gate from bashkit's `before_tool` hook with the resolved
//! name, expanded arguments and folder of every command, and
//! [`Gate::prescreen`] covers what that hook never sees, from the static facts
//! of the line that bashkit's parser gives (redirections onto devices, shapes
//! such as a fork bomb or a download piped into a shell, commands named by a
//! path, scripts fed to a shell on stdin); `clix policy check` shows the same
//! facts. The sandbox asks [`Gate::admit_exec`] about every program that starts
//! inside it.
//!
//! It must not run anything, touch files (callers hand it the rule files' text,
//! and a [`WorkspaceFiles`] view for folder listings and scripts), or print:
//! refusals are returned as text, decisions as events.

mod gate;
mod line;
mod policy;
mod rule;
mod unwrap;
mod words;

pub use gate::{Answer, Approval, Approver, AuditSink, Gate, GateOptions, PolicyEvent, Refusal, RefusedBy};
pub use line::Unparsable;
pub use policy::{
    DEFAULTS_FILE, LineEntry, LoadError, Policy, PolicySettings, RuleFile, RuleRef, Verdict, example_context,
};
pub use rule::{Decision, Origin, RedirectTarget, Rule, RuleSpec, Scope, Shape, Word};
pub use words::{Context, Files, OperandKind, WorkspaceFiles};
