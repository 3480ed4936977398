//! The hub of clix: external CLIs declared by manifests (seed 001).
//!
//! This crate owns the manifest model (the seed's JSON shape plus our fields),
//! loading manifests from hub folders in JSON, TOML and YAML (the person's
//! folders first and the workspace's `.clix/hub` last, so a cloned repository
//! cannot replace a person's tool; every manifest read through a
//! `clix_workspace::Folder` handle), validation at load with a problem per
//! file, field and fix (a bad manifest makes only its own tool unavailable, it
//! never panics; `parse_manifest` is also a fuzz target), and the mapping of a
//! call's parameters to an argv array: typed flag parsing of a command line
//! against a manifest, defaults, enums, required parameters, and the generated
//! usage. It also reads a call's result by the seed's contract (JSON stdout
//! checked against `output.schema`, structured stderr errors, the tool's
//! exit-code kinds, non-UTF-8 output such as GBK converted) as pure functions
//! of captured bytes.
//!
//! At run time ([`HubRuntime`]) it decides which tools are ready (self-test and
//! version drift at load, cached in `hub.sqlite` by the manifest's and the
//! program's size, modification and change times: ctime, which `cp -p` cannot
//! keep, so a replaced program is tested again), calls them under governance
//! (the manifest's timeout, cwd, env and network; a rate limit and
//! one-at-a-time serialization shared by every clix process through the state
//! folder, or by every replica through the shared store: a sliding window and
//! an advisory lock), writes a `kind: "hub"` line per call to the audit log and
//! reads `hub stats` back from it (both through clix-audit, which owns the
//! line's envelope and the file), and ranks tools for `hub search` with SQLite
//! FTS5's BM25. The rate limits and locks ([`Governance`]), the ranking
//! ([`rank`]) and the `kind: "mcp"` audit line's type (`McpCallRecord`) also
//! serve MCP servers' tools, by the key `SERVER TOOL`, so `hub stats` counts
//! them beside the hub's own.
//!
//! A workspace's tools are untrusted (a cloned repository may bring them): a
//! workspace manifest's program must lie in the workspace or a system folder,
//! and nothing else is mounted for it.
//!
//! It must not run a program any other way than through the OS tier's sandbox
//! (`clix-sandbox`), and never through a shell: values such as `; rm -rf /`
//! stay literal arguments. It knows nothing of the shell engine or
//! presentation. Its commands, `hub list|info|search|stats|check|call` and
//! each ready tool under its own name, are `command.rs`: [`HubConfig`] is
//! the hub's `clix_command::Capability`, which loads the runtime for an
//! engine, leaves out a tool whose name is taken, lists the tools in the
//! `run` description's hub section (the most used first past
//! `clix_command::LISTED_AT_MOST`) and tells a call of a tool that is not
//! ready why.

mod args;
mod command;
mod contract;
mod encoding;
mod exec;
mod formats;
mod governance;
mod load;
mod manifest;
mod problem;
mod readiness;
mod runtime;
mod search;
mod serialize;
mod settings;
mod state;
mod stats;

pub use args::usage;
pub use exec::{EnvLookup, EnvSource};
pub use formats::parse_manifest;
pub use governance::{Governance, Held, Refusal};
pub use load::{Hub, HubSource, LoadOptions, Tool, hub_sources, load_file, load_hub};
pub use manifest::{Manifest, Output, OutputFormat, ParamType, Parameter};
pub use problem::{FieldProblem, Problem};
pub use readiness::Readiness;
pub use runtime::{CallResult, Entry, HubConfig, HubRuntime, OUTPUT_LIMIT, StatsError};
pub use search::{Found, SearchError, rank};
pub use settings::HubSettings;
pub use stats::{McpCallRecord, ToolStats};
