//! The hub of clix: external CLIs declared by manifests (seed 001).
//!
//! This crate owns the manifest model (the seed's JSON shape plus our
//! fields), loading manifests from hub folders in JSON, TOML and YAML,
//! validation at load with a problem per file, field and fix (a bad
//! manifest makes only its own tool unavailable, it never panics), and the
//! mapping of a call's parameters to an argv array: typed flag parsing of a
//! command line against a manifest, defaults, enums, required parameters,
//! and the generated usage. It also reads a call's result by the seed's
//! contract (JSON stdout checked against `output.schema`, structured stderr
//! errors, exit-code kinds, non-UTF-8 output such as GBK converted) as pure
//! functions of captured bytes.
//!
//!
//! At run time ([`HubRuntime`]) it decides which tools are ready (self-test
//! and version drift at load, cached by the manifest's and the program's
//! modification and change times), calls them under governance (rate limit and one-at-a-time
//! serialization shared by every clix process, the manifest's timeout, cwd
//! and env), writes a `kind: "hub"` line per call to the audit log and
//! reads `hub stats` back from it (both through clix-audit, which owns the
//! line's envelope and the file), and ranks tools for `hub search` with
//! SQLite FTS5. The rate limits and locks ([`Governance`]) and the ranking
//! ([`rank`]) also serve MCP servers' tools, by the key `SERVER TOOL`.
//!
//! It must not run a program any other way than through the OS tier's
//! sandbox (`clix-sandbox`), and never through a shell: values such as
//! `; rm -rf /` stay literal arguments. It knows nothing of the shell
//! engine or presentation; the `hub` command and the tools as commands
//! live in `clix-engine`.

mod args;
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
pub use runtime::{CallResult, Entry, HubConfig, HubRuntime, OUTPUT_LIMIT};
pub use search::{Found, rank};
pub use settings::HubSettings;
pub use stats::{McpCallRecord, ToolStats};
