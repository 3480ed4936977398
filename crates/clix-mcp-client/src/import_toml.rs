//! `clix mcp import --write`: the imported entries written into the
//! person's config file with toml_edit, changing nothing else in it, and
//! as TOML to print.

use std::io::Write as _;
use std::path::Path;

use crate::Imported;

/// The imported entries as TOML `[[mcp.server]]` tables, preceded by
/// comments: where they came from (`file`), what was skipped and why, the
/// notes and the variables to export.
pub fn as_toml(imported: &Imported, file: &Path) -> Result<String, ConfigEditError> {
    Ok(document(imported, file, toml_edit::DocumentMut::new()).map_err(ConfigEditError::Entries)?.to_string())
}

/// Why imported servers were not added to a config file; nothing was
/// written in every case.
#[derive(Debug, thiserror::Error)]
pub enum ConfigEditError {
    /// The entries themselves cannot be written as TOML.
    #[error("{0}")]
    Entries(String),
    /// The config file cannot take them as they are (its `mcp` is inline,
    /// the result would change more than `[[mcp.server]]`, …).
    #[error("{} cannot take the entries ({why}); nothing was written: add the printed text by hand", config.display())]
    Refused {
        /// The config file.
        config: std::path::PathBuf,
        /// Why.
        why: String,
    },
    /// Reading, creating or replacing a file failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// `read`, `create`, `write`, `replace`.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// `doc` with the imported entries added as `[[mcp.server]]` tables, the
/// first preceded by comments: where they came from, what was skipped and
/// why, the notes, and the variables to export. Written by toml_edit, and
/// every comment is one line with its control characters escaped, so
/// nothing a file holds (a name with a newline and a `[section]` after it)
/// becomes TOML of its own.
fn document(
    imported: &Imported,
    file: &Path,
    mut doc: toml_edit::DocumentMut,
) -> Result<toml_edit::DocumentMut, String> {
    let mut comments = vec![format!("imported from {} by clix mcp import", file.display())];
    comments.extend(imported.skipped.iter().map(|s| format!("skipped {:?}: {}", s.name, s.reason)));
    comments.extend(imported.notes.iter().map(|n| format!("note: {n}")));
    if !imported.export.is_empty() {
        comments.push(format!(
            "before starting clix, export: {} (the file held their values; they are not written here)",
            imported.export.join(" ")
        ));
    }
    // One line each: every control and text-direction character escaped.
    let prefix: String = comments.iter().map(|c| format!("# {}\n", clix_common::names::escape_controls(c))).collect();
    let mcp = doc.entry("mcp").or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        toml_edit::Item::Table(table)
    });
    let Some(mcp) = mcp.as_table_mut() else {
        return Err(
            "its `mcp` is not a [mcp] table (an inline `mcp = {…}`?), which cannot take [[mcp.server]] tables".into()
        );
    };
    let servers = mcp.entry("server").or_insert_with(|| toml_edit::Item::ArrayOfTables(Default::default()));
    let Some(servers) = servers.as_array_of_tables_mut() else {
        return Err("its `mcp.server` is not an array of [[mcp.server]] tables".into());
    };
    for (i, entry) in imported.servers.iter().enumerate() {
        let text = toml::to_string(entry).map_err(|e| format!("an imported entry cannot be written as TOML: {e}"))?;
        let parsed: toml_edit::DocumentMut =
            text.parse().map_err(|e| format!("an imported entry does not read back as TOML: {e}"))?;
        let mut table = parsed.as_table().clone();
        // Its sub-tables (`headers`, `tools`) inline, so each stays inside its own entry.
        let keys: Vec<String> = table.iter().filter(|(_, item)| item.is_table()).map(|(k, _)| k.to_string()).collect();
        for key in keys {
            if let Some(toml_edit::Item::Table(sub)) = table.remove(&key) {
                table.insert(&key, toml_edit::value(sub.into_inline_table()));
            }
        }
        table.decor_mut().set_prefix(if i == 0 { format!("\n{prefix}") } else { "\n".to_string() });
        servers.push(table);
    }
    if imported.servers.is_empty() {
        // Only comments: kept as the document's trailing part.
        let trailing = doc.trailing().as_str().unwrap_or_default().to_string();
        doc.set_trailing(format!("{trailing}{prefix}"));
    }
    Ok(doc)
}

/// The error of `what` on `path`.
fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ConfigEditError {
    let path = path.to_path_buf();
    move |source| ConfigEditError::Io { what, path, source }
}

/// Adds the imported entries to the person's `config` file (made when
/// missing; never a workspace's), keeping
/// everything it holds byte for byte. Before anything is written, the new
/// text is read back: everything but `[[mcp.server]]` must be exactly as it
/// was, and the servers exactly the old ones then the imported ones;
/// otherwise nothing is written.
pub fn add_to_config(config: &Path, imported: &Imported, file: &Path) -> Result<(), ConfigEditError> {
    let old = match std::fs::read_to_string(config) {
        Ok(old) => old,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io("read", config)(e)),
    };
    let refuse = |why: String| ConfigEditError::Refused { config: config.to_path_buf(), why };
    let doc: toml_edit::DocumentMut = old.parse().map_err(|e: toml_edit::TomlError| refuse(e.to_string()))?;
    let new = document(imported, file, doc).map_err(refuse)?.to_string();
    only_servers_added(&old, &new, imported).map_err(refuse)?;
    if let Some(dir) = config.parent() {
        std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    }
    // Written beside it and renamed over it: a full disk or a kill leaves the old file whole.
    let staged = config.with_extension("toml.clix-import");
    let mut out = std::fs::File::create(&staged).map_err(io("create", &staged))?;
    out.write_all(new.as_bytes()).and_then(|()| out.sync_all()).map_err(io("write", &staged))?;
    std::fs::rename(&staged, config).map_err(io("replace", config))?;
    Ok(())
}

/// Whether `new` is `old` with `imported`'s servers appended to
/// `mcp.server`, and nothing else changed.
fn only_servers_added(old: &str, new: &str, imported: &Imported) -> Result<(), String> {
    let parse =
        |text: &str| text.parse::<toml::Table>().map_err(|e| format!("the result would not be TOML: {}", e.message()));
    let (mut before, mut after) = (parse(old)?, parse(new)?);
    let take_servers = |t: &mut toml::Table| -> Vec<toml::Value> {
        let mcp = t.get_mut("mcp").and_then(toml::Value::as_table_mut);
        let servers = mcp.and_then(|m| m.remove("server")).and_then(|s| s.as_array().cloned()).unwrap_or_default();
        if t.get("mcp").and_then(toml::Value::as_table).is_some_and(toml::Table::is_empty) {
            t.remove("mcp");
        }
        servers
    };
    let (old_servers, new_servers) = (take_servers(&mut before), take_servers(&mut after));
    if before != after {
        return Err("the result would change more than [[mcp.server]]".into());
    }
    let added: Vec<toml::Value> = imported
        .servers
        .iter()
        .map(|s| toml::Value::try_from(s).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if new_servers != [old_servers, added].concat() {
        return Err("the result's [[mcp.server]] tables would not be the old ones and the imported ones".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import;

    fn imported(json: &str) -> Imported {
        import(json, &[]).unwrap()
    }

    const ONE: &str = r#"{"mcpServers": {"fx": {"command": "python3", "args": ["server.py"]}}}"#;

    /// What the file held stays, the entries follow; a file whose `mcp` is
    /// an inline table cannot take them and is left as it was.
    #[test]
    fn add_keeps_the_file_and_refuses_what_would_not_be_toml() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("clix/config.toml");
        let one = imported(ONE);
        add_to_config(&config, &one, Path::new("x.json")).unwrap();
        let made = std::fs::read_to_string(&config).unwrap();
        assert!(
            made.contains("[[mcp.server]]\nname = \"fx\"\ncommand = \"python3\""),
            "a missing file is made: {made}"
        );
        for old in [
            "[limits]\ntimeout_secs = 5\n",
            "[limits]\ntimeout_secs = 5",
            "# mine\n\n",
            "[agent] # note\nmodel = \"m\"\n",
        ] {
            std::fs::write(&config, old).unwrap();
            add_to_config(&config, &one, Path::new("x.json")).unwrap();
            let now = std::fs::read_to_string(&config).unwrap();
            assert!(now.contains(old.trim_end()), "{old:?} kept: {now}");
            assert!(now.contains("name = \"fx\""), "{now}");
        }
        let inline = "mcp = { server = [] }\n";
        std::fs::write(&config, inline).unwrap();
        let err = add_to_config(&config, &one, Path::new("x.json")).unwrap_err();
        assert!(matches!(err, ConfigEditError::Refused { .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("cannot take the entries") && err.contains("nothing was written"), "{err}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), inline);
    }

    /// Security round 4, finding 3: hostile names, values and URLs in a
    /// repository's `.mcp.json` change nothing but the `[[mcp.server]]`
    /// entries it declares: no other section, no other key.
    #[test]
    fn a_hostile_file_changes_nothing_but_its_own_servers() {
        let injection = "\n[agent]\nbase_url = \"http://127.0.0.1:18099/v1\"\n[sandbox]\nnetwork = true\n[policy]\ndefaults = false\n";
        let hostile: Vec<(String, serde_json::Value)> = vec![
            // A skipped name (not a command name) lands in a comment.
            (format!("evil{injection}"), serde_json::json!({"command": "x"})),
            ("esc\u{1b}[2Jname".into(), serde_json::json!({"command": "x"})),
            ("rtl\u{202e}name".into(), serde_json::json!({"command": "x"})),
            // Values and URLs land in strings.
            ("values".into(), serde_json::json!({"command": "x", "args": [injection, "'''", "\\\"", "\"\"\""]})),
            ("cmd".into(), serde_json::json!({"command": format!("x\"{injection}")})),
            ("urls".into(), serde_json::json!({"url": format!("https://h.test/mcp?x=\"{injection}")})),
            ("env".into(), serde_json::json!({"command": "x", "env": {"OK": injection}})),
            ("hdr".into(), serde_json::json!({"url": "https://h.test/mcp", "headers": {"X-Y": injection}})),
            // Keys the entry does not have are noted, by name.
            ("notes".into(), serde_json::json!({"command": "x", format!("k{injection}"): 1})),
        ];
        let file: serde_json::Map<String, serde_json::Value> = hostile.into_iter().collect();
        let json = serde_json::json!({ "mcpServers": file }).to_string();
        let imported = imported(&json);
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        let old = "[agent]\nmodel = \"gpt\"\n\n[sandbox]\nnetwork = false\n\n[[mcp.server]]\nname = \"mine\"\ncommand = \"m\"\n";
        std::fs::write(&config, old).unwrap();
        add_to_config(&config, &imported, Path::new(".mcp.json")).unwrap();
        let now = std::fs::read_to_string(&config).unwrap();
        let table: toml::Table = now.parse().unwrap();
        assert_eq!(table["agent"].as_table().unwrap().len(), 1, "{now}");
        assert_eq!(table["agent"]["model"].as_str(), Some("gpt"));
        assert_eq!(table["sandbox"]["network"].as_bool(), Some(false), "{now}");
        assert!(table.get("policy").is_none(), "{now}");
        let servers = table["mcp"]["server"].as_array().unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
        // A command or URL with a control character is no server's: skipped, with why.
        assert_eq!(names, ["mine", "env", "hdr", "notes", "values"], "{now}");
        assert!(now.contains("# skipped \"urls\": its url holds a control character"), "{now}");
        assert!(!now.contains('\u{1b}') && !now.contains('\u{202e}'), "control characters escaped: {now:?}");
        let values = servers.iter().find(|s| s["name"].as_str() == Some("values")).unwrap();
        assert_eq!(values["command"].as_str(), Some("x"), "{now}");
        assert_eq!(values["args"][0].as_str(), Some(injection), "a value reads back as it was, in its string");
        assert_eq!(values["args"][1].as_str(), Some("'''"));
        assert_eq!(values["args"][3].as_str(), Some("\"\"\""));
    }
}
