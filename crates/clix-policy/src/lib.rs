//! Policy: which commands may run, decided on the command that is actually
//! about to run.
//!
//! Rules (`allow` / `ask` / `deny`, each with its `why`, its examples and
//! counterexamples checked at load) come from clix's built-in defaults
//! (`defaults.toml`), the person's `[policy]` in `config.toml` and
//! `policy.toml`, and the workspace's `.clix/policy.toml` (which may only
//! add `deny` and `ask`). A [`Policy`] decides one argv, looked through
//! wrappers (`env`, `timeout`, `sudo`…), `xargs`, `find -exec` and literal
//! `bash -c`/`eval` scripts, by the program's basename; several matching
//! rules give the strictest decision. A [`Gate`] applies it to a session:
//! the person's answers, `--allow`, the refusal text, the audit events.
//!
//! The shell calls the gate from bashkit's `before_tool` hook with the
//! resolved name, expanded arguments and folder of every command, and
//! [`Gate::prescreen`] covers what that hook never sees (redirections,
//! shapes such as a fork bomb, commands named by a path, scripts fed to a
//! shell on stdin). The sandbox asks [`Gate::admit_exec`] about every
//! program that starts inside it.
//!
//! It must not run anything, touch files (callers hand it the rule files'
//! text, and a [`WorkspaceFiles`] view for folder listings and scripts), or
//! print: refusals are returned as text, decisions as events.

mod gate;
mod line;
mod policy;
mod rule;
mod unwrap;
mod words;

pub use gate::{Answer, Approval, Approver, AuditSink, Gate, GateOptions, PolicyEvent};
pub use policy::{
    DEFAULTS_FILE, LineEntry, LoadError, Policy, PolicySettings, RuleFile, RuleRef, Verdict, example_context,
};
pub use rule::{Decision, Origin, RedirectTarget, Rule, RuleSpec, Scope, Shape, Word};
pub use words::{Context, Files, OperandKind, WorkspaceFiles};
