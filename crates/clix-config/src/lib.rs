//! Where clix keeps its files, and the one layered configuration.
//!
//! This crate owns the XDG layout (`CLIX_HOME` overrides all of it) and the
//! merge of settings from four layers, each later one winning: built-in
//! defaults, the TOML config file, `CLIX_*` environment variables, and
//! command-line flags. It remembers where every value came from, for
//! `clix config show`.
//!
//! It must not know what the settings mean: each crate defines its own
//! section as a serde struct, and the binary assembles them.
//!
//! It also keeps the process's secrets ([`secrets`]): the binary moves every
//! secret-named variable out of the environment at start, and whatever reads
//! one (the `CLIX_*` layer here, provider keys, the MCP token) asks
//! [`secrets::var`].

mod layered;
mod paths;
pub mod secrets;

pub use layered::{ConfigError, Loaded, Setting, Source, env_var_name, load};
pub use paths::Paths;
pub use secrets::Secret;
