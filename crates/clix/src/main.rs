//! `clix`: the command-line front end. It parses arguments, loads the
//! configuration and hands command lines to `clix-engine`, tasks to
//! `clix-agent` and MCP clients to `clix-mcp`; it holds no execution,
//! presentation or agent logic of its own, only their rendering.

mod agent_cmd;
mod cli;
mod hub_cmd;
mod repl;
mod replay_html;
mod settings;

use std::process::ExitCode;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("clix: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(cli::main())
}
