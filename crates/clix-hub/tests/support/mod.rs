//! What the hub's test files share: a tool folder written for a test.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A tool folder `hub/name`: `manifest.json` (the defaults below patched
/// by `patch`) next to an executable bash script `run`.
pub(crate) fn write_tool(hub: &Path, name: &str, patch: Value, script: &str) -> PathBuf {
    let dir = hub.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut manifest = json!({
        "name": name, "version": "1.0.0", "description": format!("the {name} tool"),
        "command": "./run", "self_test": false, "version_args": false,
    });
    for (k, v) in patch.as_object().unwrap() {
        manifest[k] = v.clone();
    }
    std::fs::write(dir.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let program = dir.join("run");
    std::fs::write(&program, format!("#!/bin/bash\n{script}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
