//! `clix mcp import FILE [--write]`: the `mcpServers` of a Claude Desktop,
//! Claude Code or Cursor config file as `[[mcp.server]]` entries (clix-mcp-
//! client reads them), printed as TOML with what was skipped and why and the
//! variables to export as comments; `--write` adds the entries to the
//! person's config file with toml_edit, changing nothing else in it.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_config::Paths;

/// Reads `file`, prints the entries, and with `write` adds them to the config file.
pub(crate) fn import(paths: &Paths, file: &Path, write: bool) -> Result<ExitCode> {
    let json = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    // The config must load: its names are skipped, and a broken file is not added to.
    let settings = clix_session::load(paths, &[])?.value;
    let existing: Vec<&str> = settings.mcp.server.iter().map(|s| s.name.as_str()).collect();
    let imported = clix_mcp_client::import(&json, &existing).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let text = clix_mcp_client::as_toml(&imported, file).map_err(anyhow::Error::msg)?;
    clix_terminal::out(text.as_bytes())?;
    if !write {
        if !imported.servers.is_empty() {
            eprintln!(
                "clix mcp import: {} server(s) read; nothing written (add --write to add them to {})",
                imported.servers.len(),
                paths.config_file.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    if imported.servers.is_empty() {
        eprintln!("clix mcp import: no server to write; {} is unchanged", paths.config_file.display());
        return Ok(ExitCode::SUCCESS);
    }
    clix_mcp_client::add_to_config(&paths.config_file, &imported, file).map_err(anyhow::Error::msg)?;
    // What was written must load, as every later clix will load it.
    if let Err(e) = clix_session::load(paths, &[]) {
        bail!("{} was added to, but does not load now: {e}", paths.config_file.display());
    }
    eprintln!("clix mcp import: {} server(s) added to {}", imported.servers.len(), paths.config_file.display());
    Ok(ExitCode::SUCCESS)
}
