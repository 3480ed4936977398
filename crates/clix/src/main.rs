//! `clix`: the command-line front end, thin over the library crates.
//!
//! It owns:
//!
//! - the command line (clap): the subcommands (`run`, `ask`, `chat`, `runs`,
//!   `replay`, `diff`, `undo`, `mcp` and `mcp import`, `hub`, `memory`, `eval`,
//!   `policy`, `plan`, `config`, `storage`, `doctor`, `tool-def`, `commands`,
//!   `completions`), and the session flags (`--workspace`, `--timeout`,
//!   `--topic`, `--hub`, `--domain`, `--allow`, `--mode`) as the last settings
//!   layer;
//! - each subcommand's choices: which library to ask, what `clix-terminal`
//!   draws of the answer, the exit code;
//! - the process's edges: at start, before any thread exists, the secret-named
//!   variables moved out of the environment (`clix_config::secrets`); at the
//!   end, a closed stdout ends clix with 141
//!   (`clix_common::exit::BROKEN_PIPE`), as SIGPIPE would, never a panic.
//!
//! It must not assemble a session (`clix-session` does: engine, agent, plan
//! runner), draw (`clix-terminal` does), nor hold execution, presentation or
//! agent logic.

mod agent_cmd;
mod changes_cmd;
mod cli;
mod eval_cmd;
mod hub_cmd;
mod plan_cmd;
mod policy_cmd;

use std::io::Write;
use std::process::ExitCode;

/// A plain `fn`, not `#[tokio::main]`: the secrets leave the environment
/// first, while this is the only thread, and only then does the runtime
/// (and every thread it may start) exist.
fn main() -> ExitCode {
    // SAFETY: nothing has started a thread yet (no runtime, no library init
    // spawns one before `main`), so no other code can be reading or writing
    // the environment while it is edited.
    unsafe { clix_config::secrets::take_from_environment(clix_engine::is_secret_name) };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            // Even a closed stderr must not turn this into a panic.
            let _ = writeln!(std::io::stderr(), "clix: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(cli::main())
}
