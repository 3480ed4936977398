//! `clix`: the command-line front end. It parses arguments, loads the
//! configuration and hands command lines to `clix-engine`; it holds no
//! execution or presentation logic of its own.

mod cli;
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
