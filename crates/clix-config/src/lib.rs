//! Where clix keeps its files, and the one layered configuration.
//!
//! This crate owns:
//!
//! - the file layout ([`Paths`]): the XDG config, data, state and cache
//!   folders, all of them under `CLIX_HOME` when it is set;
//! - the merge of settings from four layers, each later one winning: built-in
//!   defaults, the TOML config file, `CLIX_*` environment variables and
//!   command-line flags ([`load`]), every problem reported at once, and where
//!   each value came from remembered for `clix config show`. A `CLIX_*`
//!   variable that is no setting's (nor one of the few other variables clix
//!   reads, nor under `CLIX_TEST_`) is an error naming the nearest setting's
//!   variable, so a mistyped name never goes unnoticed;
//! - the process's secrets ([`secrets`]): the binary's `main`, before any
//!   thread exists, moves every secret-named variable out of the environment
//!   (the kernel's copy included: a hostile workspace may get clix to read
//!   `/proc/self/environ`), and whatever reads one (the `CLIX_*` layer here,
//!   provider keys, the MCP token) asks [`secrets::var`].
//!
//! It must not know what a setting means: each crate defines its own section as
//! a serde struct with its own `Validate`, and `clix-session` assembles them
//! into one `Settings`.

mod layered;
mod paths;
pub mod secrets;

pub use layered::{ConfigError, Loaded, Setting, Source, env_var_name, load};
pub use paths::Paths;
pub use secrets::Secret;
