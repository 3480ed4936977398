//! The OS tier: real programs (python3, git, cargo, GNU tools) run inside a
//! bubblewrap sandbox.
//!
//! This crate owns the isolation policy (namespaces, read-only system and
//! toolchain mounts, the workspace bound read-write, no network by default),
//! the environment allowlist that keeps secrets out, resource limits
//! (time, memory, processes, file size, open files), process-group
//! teardown, bounded output capture with exact counts, the availability
//! probe and the audit log of every OS execution.
//!
//! It must not run anything on the host outside bubblewrap unless the
//! configuration explicitly says `mode = "host"`; when the sandbox is
//! unavailable it returns an error that says how to fix it. It knows
//! nothing about the shell engine or presentation.

mod audit;
mod cgroup;
mod env;
mod mounts;
mod probe;
mod run;
mod seccomp;
mod settings;

pub use audit::{AuditLog, AuditRecord, redact_argv};
pub use env::{is_secret_name, sandbox_env};
pub use mounts::SYSTEM_DIRS;
pub use probe::{Availability, probe};
pub use run::{HostEnv, Outcome, Request, Sandbox, SandboxError};
pub use settings::{SandboxMode, SandboxSettings};
