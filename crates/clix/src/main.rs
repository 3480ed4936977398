//! `clix`: the command-line front end, and the one crate that talks to a
//! terminal.
//!
//! It owns:
//!
//! - the command line (clap): the subcommands (`run`, `ask`, `chat`, `runs`,
//!   `replay`, `diff`, `undo`, `mcp` and `mcp import`, `hub`, `memory`, `eval`,
//!   `policy`, `plan`, `config`, `storage`, `doctor`, `tool-def`, `commands`,
//!   `completions`), and the session flags (`--workspace`, `--timeout`,
//!   `--topic`, `--hub`, `--domain`, `--allow`, `--mode`) as the last settings
//!   layer;
//! - rendering: agent events on a terminal (the answer's Markdown drawn with
//!   ANSI styles; raw when piped, under `--jsonl` or with `NO_COLOR`), the
//!   `--jsonl` stream, the chat line editor, the HTML replay page, the plan's
//!   live view;
//! - the terminal's `Approver` (a policy `ask`) and `Reviewer` (`review` mode),
//!   which ask on `/dev/tty` with the spinner paused;
//! - `clix mcp import FILE [--write]`'s choices: print what clix-mcp-client
//!   makes of a client's `mcpServers`, add it to the config file only with
//!   `--write`, and check that the result loads;
//! - the one `tracing` subscriber (stderr only; `--log-level`, else `CLIX_LOG`,
//!   else warn): the library crates emit events and never print;
//! - the process's edges: at start, before any thread exists, the secret-named
//!   variables moved out of the environment (`clix_config::secrets`); at the
//!   end, a closed stdout ends clix with 141
//!   (`clix_common::exit::BROKEN_PIPE`), as SIGPIPE would, never a panic.
//!
//! `clix hub …` and `clix memory …` run the engine's own `hub` and `memory`
//! commands, so a person and an agent see the same thing.
//!
//! It must not assemble a session (`clix-session` does: engine, agent, plan
//! runner) nor hold execution, presentation or agent logic: each subcommand
//! parses, asks a library, and renders what it gets.

mod agent_cmd;
mod changes_cmd;
mod cli;
mod eval_cmd;
mod hub_cmd;
mod logging;
mod mcp_import;
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

#[cfg(test)]
mod tests {
    /// The one rule (clix-sandbox's, also what keeps variables out of the
    /// sandbox) takes every provider key and secret-looking name out of the
    /// environment at start, case-insensitively, and leaves what clix reads
    /// as plain settings.
    #[test]
    fn which_variables_leave_the_environment_at_start() {
        let taken = [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AGENT_API_KEY",
            "CLIX_MEMORY_API_KEY",
            "CLIX_AGENT_API_KEY",
            "CLIX_MCP_TOKEN",
            "CLIX_HUB_ENV_GH_TOKEN",
            "MY_TOKEN",
            "my_token",
            "GITHUB_TOKEN_RO",
            "AWS_SECRET_ACCESS_KEY",
            "client_secret",
            "DB_PASSWORD",
            "PgPassword",
            "ssh_key",
        ];
        for name in taken {
            assert!(clix_engine::is_secret_name(name), "{name} stays in the environment");
        }
        let kept = [
            "PATH",
            "HOME",
            "LANG",
            "CLIX_HOME",
            "CLIX_HUB_PATH",
            "CLIX_SANDBOX_MODE",
            "AGENT_BASE_URL",
            "OPENAI_BASE_URL",
            "AGENT_MODEL",
            "NO_COLOR",
            "XDG_CONFIG_HOME",
        ];
        for name in kept {
            assert!(!clix_engine::is_secret_name(name), "{name} would leave the environment");
        }
    }
}
