//! `clix mcp import FILE [--write]`: the `mcpServers` of a Claude Desktop,
//! Claude Code or Cursor config file as `[[mcp.server]]` entries (what
//! clix-mcp-client makes of them), and with `write` added to the person's
//! config file, changing nothing else in it, then checked to load.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clix_config::Paths;

/// What an import made: the entries as TOML (with what was skipped and why
/// and the variables to export, as comments), and a line for the person.
#[derive(Debug)]
pub struct Imported {
    /// The `[[mcp.server]]` entries.
    pub toml: String,
    /// What was read, and written or not.
    pub note: Option<String>,
}

/// Reads `file`'s `mcpServers`; with `write`, adds them to the config file.
pub fn import_mcp_servers(paths: &Paths, file: &Path, write: bool) -> Result<Imported> {
    let json = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    // The config must load: its names are skipped, and a broken file is not added to.
    let settings = crate::load(paths, &[])?.value;
    let existing: Vec<&str> = settings.mcp.server.iter().map(|s| s.name.as_str()).collect();
    let imported = clix_mcp_client::import(&json, &existing).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let toml = clix_mcp_client::as_toml(&imported, file)?;
    let (count, config) = (imported.servers.len(), paths.config_file.display());
    let note = match (write, count) {
        (false, 0) => None,
        (false, _) => Some(format!(
            "clix mcp import: {count} server(s) read; nothing written (add --write to add them to {config})"
        )),
        (true, 0) => Some(format!("clix mcp import: no server to write; {config} is unchanged")),
        (true, _) => {
            clix_mcp_client::add_to_config(&paths.config_file, &imported, file)?;
            // What was written must load, as every later clix will load it.
            if let Err(e) = crate::load(paths, &[]) {
                bail!("{config} was added to, but does not load now: {e}");
            }
            Some(format!("clix mcp import: {count} server(s) added to {config}"))
        }
    };
    Ok(Imported { toml, note })
}
