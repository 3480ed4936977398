//! The OS tier: real programs (python3, git, cargo, GNU tools) run inside a
//! bubblewrap sandbox. Every real program clix runs on this machine starts here
//! (clix-clip's ssh, scp, docker and kubectl clients are the one exception,
//! written in ARCHITECTURE.md).
//!
//! The program is hostile. Inside, it runs as uid 1000 of a user namespace, and
//! that uid is whoever runs clix outside (root, when clix runs as root): every
//! file it makes in the workspace belongs to that user on the host. The jail
//! must hold anyway.
//!
//! This crate owns:
//!
//! - the isolation policy: new user, pid, ipc, uts, net and cgroup namespaces,
//!   no capabilities, system and toolchain folders mounted read-only, the
//!   workspace bound read-write (`nosuid`, `nodev`), no network by default;
//! - the syscall filter (`seccomp.rs`, compiled with `seccompiler`, handed to
//!   bwrap with `--seccomp`): no setuid/setgid modes (`chmod` family, `mknod`,
//!   creating `open`s), no device nodes, no nested user namespace (where a
//!   `security.capability` xattr could be written); `openat2`, `clone3` and
//!   io_uring answer `ENOSYS` so programs fall back to calls the filter can
//!   inspect. A sandbox that cannot build it (an architecture seccompiler does
//!   not know) refuses to run;
//! - the exec-time check (`exec_check.rs`): a seccomp user-notification filter
//!   on `execve`/`execveat` whose listener clix holds, so every program that
//!   starts inside, however it was reached, is put to the caller's
//!   [`ExecJudge`] (the session's policy gate) before it runs; a refusal ends
//!   the whole run, exit 126;
//! - the workspace repository's `.git` bound over itself and what git runs from
//!   it (config, hooks, info, modules, worktrees) read-only
//!   (`clix_workspace::Folder::git_protected`), so no program plants what the
//!   person's next `git status` would run;
//! - secrets never mounted: the secret stores of
//!   [`clix_workspace::SECRET_STORES`] (one list, shared with the workspace
//!   rule) and clix's own folders are never mounted, no mount holds the home
//!   folder (a PATH folder there is mounted alone), and a store inside a
//!   mounted folder (`~/.cargo/credentials.toml` in the cargo toolchain, nvm's
//!   `etc/npmrc`, pyenv's `pip.conf`, `~/.local/share/keyrings` under
//!   `~/.local`) is covered at every run (`/dev/null`, or an empty read-only
//!   tmpfs for a folder) and listed as hidden in `sandbox status`. Stores
//!   nested in the workspace are found by a walk at each run (`nested_masks`:
//!   at most 5 levels and 4,000 folders, `.git` skipped, no symlink followed);
//! - the environment allowlist that keeps secret variables out (by
//!   `clix_common::is_secret_name`, re-exported here for callers);
//! - resource limits (time, memory, processes, file size, open files), with
//!   per-run cgroups removed when the run ends (or, when clix is killed, by its
//!   warden, `clix_process::warden`); the leftovers of a machine that went down
//!   mid-run only by [`remove_leftover_cgroups`] (`clix doctor`), never at
//!   start;
//! - how a run starts (`stub.rs`): bwrap sets the sandbox up around a waiting
//!   shell that then `exec`s the program, so a session keeps the next run's
//!   sandbox set up ahead on a thread of its own (`keep_ready`); no fd of
//!   clix's own reaches bwrap or the program;
//! - which process groups a run has (bwrap's, and the program's own session
//!   inside it) and the grace a program gets (2 s); the supervision itself
//!   (stdin, capped capture with exact counts, the time limit, SIGTERM then
//!   SIGKILL, the bounded drain) is `clix-process`'s;
//! - the availability probe (errors that say how to fix it), and a `kind: "os"`
//!   line in the audit log (clix-audit's envelope and writer) for every OS
//!   execution;
//! - long-lived programs in the same sandbox: [`Service`] (the browser;
//!   `start_stdio_service` for an MCP server), with pipes at fixed descriptors,
//!   the same layout and filter, no `RLIMIT_AS` (a browser reserves far more
//!   than it uses; the cgroup's memory limit holds where there is one), ended
//!   with its process group when dropped (and by clix's warden when clix dies,
//!   whatever killed it: bwrap's `--die-with-parent` alone misses a sandbox
//!   still being set up).
//!
//! It must not run anything on the host outside bubblewrap unless the
//! configuration explicitly says `mode = "host"` (then none of the above holds:
//! no namespaces, no filter, no hidden files); when the sandbox is unavailable
//! it returns an error that says how to fix it, never a silent weaker sandbox.
//! It knows nothing about plans, the shell engine or presentation.

mod audit;
mod cgroup;
mod env;
mod exec_check;
mod mounts;
mod probe;
mod run;
mod seccomp;
mod service;
mod settings;
mod stub;

pub use audit::{AuditLog, AuditRecord, redact_argv};
pub use cgroup::remove_leftover_cgroups;
// The rule lives in clix-common; the sandbox's callers (clip's host
// children, the engine's `sandbox` command) take it from here with the env.
pub use clix_common::is_secret_name;
pub use env::sandbox_env;
pub use exec_check::{Exec, ExecJudge};
pub use mounts::SYSTEM_DIRS;
pub use probe::{Availability, probe};
// The supervisor's outcome is a run's: its callers take it from here.
pub use clix_process::Outcome;
pub use run::{ConfineError, HostEnv, Request, Sandbox, SandboxError, pipe};
pub use service::{Service, ServiceRequest};
pub use settings::{SandboxMode, SandboxSettings, is_variable_name};
