//! A task's MCP server (a task line's `"mcp"`): one `[[mcp.server]]` entry,
//! which the `run` design gets as a command and the `mcp-direct` design as
//! typed tools.
//!
//! An argument written `./PATH` is a file beside the suite (the server's
//! script), made absolute when the suite loads, so the server starts the
//! same wherever the eval runs; its bytes are part of the task's digest,
//! as a hub folder's are. The server runs in the attempt's sandbox with its
//! folder read-only, never in the workspace, so no design can read its
//! source to skip the work.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clix_common::settings::Validate;
use clix_mcp_client::{McpSettings, ServerEntry, Servers, ToolCache, Transport};
use clix_sandbox::Sandbox;
use serde_json::Value;

/// The entry a task line's `mcp` object describes, its `./` arguments
/// anchored at `suite_dir`; the error says what is wrong.
pub(crate) fn parse(value: &Value, suite_dir: &Path) -> Result<ServerEntry, String> {
    let mut entry: ServerEntry = serde_json::from_value(value.clone())
        .map_err(|e| format!("{e}; an MCP server is {{\"name\", \"command\", \"args\"}} as in [[mcp.server]]"))?;
    if entry.transport() != Transport::Stdio {
        return Err("the eval starts its servers itself: give `command` and `args` (stdio), not `url`".into());
    }
    if let Some(bad) = (McpSettings { server: vec![entry.clone()] }).validate().into_iter().next() {
        return Err(bad.to_string());
    }
    for arg in &mut entry.args {
        if let Some(relative) = arg.strip_prefix("./") {
            let path = suite_dir.join(relative);
            let absolute = path
                .canonicalize()
                .map_err(|e| format!("{arg}: {e} (a ./ argument is a file beside the suite file)"))?;
            *arg = absolute.display().to_string();
        }
    }
    Ok(entry)
}

/// The files an entry's arguments name (its script), for the task's digest.
pub(crate) fn files(entry: &ServerEntry) -> Vec<PathBuf> {
    entry.args.iter().map(PathBuf::from).filter(|p| p.is_absolute() && p.is_file()).collect()
}

/// Lists `entry`'s tools once (starting it in `sandbox`) and keeps the
/// list in `lists`, the attempt's state folder, as the server's first use
/// in an earlier session leaves it: the `run` design then starts knowing
/// the tools (how each is called, the shape of its result), as
/// `mcp-direct` knows them from its definitions. The server ends after.
pub(crate) async fn keep_tool_list(
    entry: &ServerEntry,
    sandbox: Sandbox,
    workspace: &Path,
    lists: &Path,
) -> Result<(), String> {
    let settings = McpSettings { server: vec![entry.clone()] };
    let servers = Servers::new(&settings, Arc::new(sandbox), workspace).with_tool_cache(ToolCache::new(lists));
    servers.tools(&entry.name).await.map(drop).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dot_arguments_are_files_beside_the_suite() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.py"), "print()").unwrap();
        let value = json!({"name": "shop", "command": "python3", "args": ["./server.py", "-v"]});
        let entry = parse(&value, dir.path()).unwrap();
        let script = dir.path().canonicalize().unwrap().join("server.py");
        assert_eq!(entry.args, vec![script.display().to_string(), "-v".to_string()]);
        assert_eq!(files(&entry), vec![script]);

        let missing = parse(&json!({"name": "shop", "command": "python3", "args": ["./nope.py"]}), dir.path());
        assert!(missing.unwrap_err().contains("./nope.py"), "a missing script is named");
        let http = parse(&json!({"name": "shop", "url": "http://127.0.0.1:1/mcp"}), dir.path()).unwrap_err();
        assert!(http.contains("not `url`"), "{http}");
        let name = parse(&json!({"name": "bad name", "command": "x"}), dir.path()).unwrap_err();
        assert!(name.contains("bad name"), "{name}");
        let typo = parse(&json!({"name": "s", "comand": "x"}), dir.path()).unwrap_err();
        assert!(typo.contains("comand"), "{typo}");
    }
}
