//! Each server's tool list kept between sessions, so finding a tool
//! (`mcp search`) does not start every server: one JSON file per server in
//! a folder of the caller's (clix's state folder), named by a hash of what
//! starts the server (its command, arguments, URL, headers, variables'
//! names, network), and written again whenever the server is started and
//! lists its tools anyway.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::schema::Tool;
use crate::settings::ServerEntry;

/// A tool as a search reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedTool {
    /// Its name: the subcommand.
    pub name: String,
    /// What it does, as the server says.
    pub description: String,
    /// Its parameters' names.
    pub parameters: Vec<String>,
    /// How it is called (`TOOL --a <string> [--b <integer>]`); empty in a list kept
    /// before it was recorded.
    #[serde(default)]
    pub synopsis: String,
    /// The shape of its structured result, empty without one.
    #[serde(default)]
    pub output: String,
}

impl From<&Tool> for ListedTool {
    fn from(tool: &Tool) -> Self {
        ListedTool {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: tool.params.iter().map(|p| p.name.clone()).collect(),
            synopsis: tool.synopsis(),
            output: tool.output.clone(),
        }
    }
}

/// The folder of tool lists.
#[derive(Debug, Clone)]
pub struct ToolCache {
    dir: PathBuf,
}

/// What the file holds: the list, and the server it was listed from.
#[derive(Serialize, Deserialize)]
struct Cached {
    server: String,
    tools: Vec<ListedTool>,
}

impl ToolCache {
    /// Lists kept in `dir` (made when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ToolCache { dir: dir.into() }
    }

    /// Where `entry`'s list is kept.
    pub fn path(&self, entry: &ServerEntry) -> PathBuf {
        self.dir.join(format!("{:016x}.json", identity_hash(entry)))
    }

    /// `entry`'s list as last written, if any (a file that does not read is none).
    pub fn read(&self, entry: &ServerEntry) -> Option<Vec<ListedTool>> {
        let text = std::fs::read_to_string(self.path(entry)).ok()?;
        serde_json::from_str::<Cached>(&text).ok().map(|c| c.tools)
    }

    /// Keeps `tools` as `entry`'s list. A list that cannot be written only
    /// means the next search starts the server: logged, not an error.
    pub(crate) fn write(&self, entry: &ServerEntry, tools: &[Tool]) {
        let cached = Cached { server: entry.name.clone(), tools: tools.iter().map(ListedTool::from).collect() };
        let path = self.path(entry);
        if let Err(e) = write_atomically(&self.dir, &path, &cached) {
            tracing::warn!(server = %entry.name, path = %path.display(), error = %e, "cannot keep the MCP server's tool list");
        }
    }
}

/// Another process may read while this one writes: a whole file or none.
fn write_atomically(dir: &Path, path: &Path, cached: &Cached) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = serde_json::to_string(cached).map_err(std::io::Error::other)?;
    let partial = path.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

/// FNV-1a (64 bits) over what starts the server: stable across builds and
/// machines, unlike std's hasher. Its name, description and limits are left
/// out (they do not change its tools).
fn identity_hash(entry: &ServerEntry) -> u64 {
    let identity = serde_json::json!({
        "command": entry.command,
        "args": entry.args,
        "url": entry.url,
        "headers": entry.headers,
        "env": entry.env,
        "network": entry.network,
    });
    identity.to_string().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_kept_under_what_starts_its_server() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::new(dir.path().join("tools"));
        let entry = ServerEntry::stdio("fx", "python3", &["server.py"]);
        assert_eq!(cache.read(&entry), None);
        let schema = serde_json::json!({"properties": {"count": {"type": "integer"}}});
        let tool = Tool::from_schema("list", "Lists records.", schema.as_object().unwrap());
        cache.write(&entry, std::slice::from_ref(&tool));
        let want = vec![ListedTool {
            name: "list".into(),
            description: "Lists records.".into(),
            parameters: vec!["count".into()],
            synopsis: "list [--count <integer>]".into(),
            output: String::new(),
        }];
        assert_eq!(cache.read(&entry), Some(want.clone()));
        // Renamed or limited, the same server: the same list.
        let renamed = ServerEntry { name: "other".into(), rate_limit: Some(3), ..entry.clone() };
        assert_eq!(cache.read(&renamed), Some(want));
        // Other arguments: another server, nothing kept for it yet.
        let moved = ServerEntry::stdio("fx", "python3", &["server.py", "--v2"]);
        assert_eq!(cache.read(&moved), None);
    }
}
