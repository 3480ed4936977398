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

mod layered;
mod paths;

pub use layered::{ConfigError, Loaded, Setting, Source, env_var_name, load};
pub use paths::Paths;
