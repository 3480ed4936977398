//! `clix mcp import FILE [--write]`: the `mcpServers` of a Claude Desktop,
//! Claude Code or Cursor config file as `[[mcp.server]]` entries (clix-mcp-
//! client reads them), printed as TOML with what was skipped and why and the
//! variables to export as comments; `--write` appends that text to the
//! person's config file, keeping what it holds.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clix_config::Paths;

/// Reads `file`, prints the entries, and with `write` appends them to the config file.
pub(crate) fn import(paths: &Paths, file: &Path, write: bool) -> Result<ExitCode> {
    let json = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    // The config must load: its names are skipped, and a broken file is not appended to.
    let settings = clix_session::load(paths, &[])?.value;
    let existing: Vec<&str> = settings.mcp.server.iter().map(|s| s.name.as_str()).collect();
    let imported = clix_mcp_client::import(&json, &existing).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let text = report(&imported, file);
    crate::cli::out(text.as_bytes())?;
    if !write {
        if !imported.servers.is_empty() {
            eprintln!(
                "clix mcp import: {} server(s) read; nothing written (add --write to append them to {})",
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
    append(&paths.config_file, &text)?;
    // What was written must load, as every later clix will load it.
    if let Err(e) = clix_session::load(paths, &[]) {
        bail!("{} was appended to, but does not load now: {e}", paths.config_file.display());
    }
    eprintln!("clix mcp import: {} server(s) appended to {}", imported.servers.len(), paths.config_file.display());
    Ok(ExitCode::SUCCESS)
}

/// The entries as TOML, then what was skipped, the notes and the variables
/// to export as comments: the whole text is valid TOML.
fn report(imported: &clix_mcp_client::Imported, file: &Path) -> String {
    let mut text = format!("# imported from {} by clix mcp import\n", file.display());
    if !imported.servers.is_empty() {
        text.push_str(&imported.toml());
    }
    for skipped in &imported.skipped {
        text.push_str(&format!("# skipped {}: {}\n", skipped.name, skipped.reason));
    }
    for note in &imported.notes {
        text.push_str(&format!("# note: {note}\n"));
    }
    if !imported.export.is_empty() {
        text.push_str(&format!(
            "# before starting clix, export: {} (the file held their values; they are not written here)\n",
            imported.export.join(" ")
        ));
    }
    text
}

/// Appends `text` to `config` (made when missing), after a blank line; the
/// result is checked to be TOML first, so a file that cannot take
/// `[[mcp.server]]` tables (an inline `mcp = {…}`) is left as it was.
fn append(config: &Path, text: &str) -> Result<()> {
    let old = match std::fs::read_to_string(config) {
        Ok(old) => old,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", config.display())),
    };
    let separator = match old.as_str() {
        "" => "",
        o if o.ends_with("\n\n") => "",
        o if o.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    let addition = format!("{separator}{text}");
    if let Err(e) = format!("{old}{addition}").parse::<toml::Table>() {
        bail!(
            "{} cannot take the entries as [[mcp.server]] tables ({}); nothing was written: add the printed text \
             by hand",
            config.display(),
            e.message()
        );
    }
    if let Some(dir) = config.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(config)
        .with_context(|| format!("cannot open {}", config.display()))?;
    file.write_all(addition.as_bytes()).with_context(|| format!("cannot write {}", config.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "[[mcp.server]]\nname = \"fx\"\ncommand = \"python3\"\n";

    /// What the file held stays, the entries follow after a blank line; a
    /// file whose `mcp` is an inline table cannot take them and is left as it was.
    #[test]
    fn append_keeps_the_file_and_refuses_what_would_not_be_toml() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("clix/config.toml");
        append(&config, ENTRY).unwrap();
        assert_eq!(std::fs::read_to_string(&config).ok().as_deref(), Some(ENTRY), "a missing file is made");
        let rows = [
            ("[limits]\ntimeout_secs = 5\n", "[limits]\ntimeout_secs = 5\n\n"),
            ("[limits]\ntimeout_secs = 5", "[limits]\ntimeout_secs = 5\n\n"),
            ("# mine\n\n", "# mine\n\n"),
        ];
        for (old, kept) in rows {
            std::fs::write(&config, old).unwrap();
            append(&config, ENTRY).unwrap();
            assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), format!("{kept}{ENTRY}"), "{old:?}");
        }
        let inline = "mcp = { server = [] }\n";
        std::fs::write(&config, inline).unwrap();
        let err = append(&config, ENTRY).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("cannot take the entries") && err.contains("nothing was written"), "{err}");
        assert_eq!(std::fs::read_to_string(&config).unwrap_or_default(), inline);
    }
}
