//! What comes from the person besides words typed at a prompt: piped
//! stdin, and Ctrl-C.

use std::io::{IsTerminal, Read};

use anyhow::{Context, Result};

/// Piped stdin, read whole; `None` when stdin is a terminal or empty.
pub fn read_piped_stdin() -> Result<Option<Vec<u8>>> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    stdin.read_to_end(&mut bytes).context("cannot read stdin")?;
    Ok((!bytes.is_empty()).then_some(bytes))
}

/// On the first Ctrl-C, says it is `stopping` and calls `first` (the work
/// in flight ends and is saved); on the second, clix exits with 130.
pub fn on_ctrl_c(stopping: &'static str, first: impl Fn() + Send + 'static) {
    tokio::spawn(async move {
        let mut pressed = 0;
        while tokio::signal::ctrl_c().await.is_ok() {
            pressed += 1;
            if pressed > 1 {
                eprintln!("\nclix: exiting");
                std::process::exit(clix_common::exit::CANCELLED);
            }
            eprintln!("\nclix: {stopping} (Ctrl-C again to exit)");
            first();
        }
    });
}
