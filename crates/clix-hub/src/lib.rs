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
//! It must not execute anything itself. A tool runs through the OS tier's
//! sandbox (`clix-sandbox`) with the argv built here; no shell is ever
//! involved, so values such as `; rm -rf /` stay literal arguments.

pub mod args;
pub mod contract;
pub mod encoding;
pub mod load;
pub mod manifest;
pub mod problem;

pub use args::{ArgError, build_argv, check_args, parse_command_line, usage};
pub use contract::{ExitKind, OutputError, ToolError, check_output, error_text, parse_error};
pub use encoding::{Decoded, decode_output};
pub use load::{Hub, HubSource, LoadOptions, Tool, hub_sources, load_file, load_hub, parse_document};
pub use manifest::{Manifest, Output, OutputFormat, ParamType, Parameter};
pub use problem::{FieldProblem, Problem};
