//! Paths and filesystem errors as a command reports them.

use std::path::{Path, PathBuf};

/// `path` as the shell would open it from `cwd`.
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    bashkit::normalize_path(&cwd.join(path))
}

/// The reason part of a filesystem error, worded like coreutils.
pub fn fs_reason(error: &bashkit::Error) -> String {
    match error {
        // The workspace handle's own errors explain themselves (a symlink
        // out, a FIFO); only the kernel's terse ones get bash's wording.
        bashkit::Error::Io(io) if io.raw_os_error().is_none() && io.get_ref().is_some() => io.to_string(),
        bashkit::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::NotFound => "No such file or directory".into(),
            std::io::ErrorKind::PermissionDenied => "Permission denied".into(),
            std::io::ErrorKind::IsADirectory => "Is a directory".into(),
            _ => io.to_string(),
        },
        other => other.to_string(),
    }
}

/// What the line exported (`export X=1`, `X=1 prog`) reaches a program,
/// as in bash, except the sandbox's own PATH and HOME (its programs and
/// its empty home are where they are) and secret-looking names, which
/// never enter a sandbox, whoever set them.
pub fn exported_env(env: &std::collections::HashMap<String, String>) -> Vec<(String, String)> {
    let mut passed: Vec<(String, String)> = env
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "PATH" | "HOME") && !clix_sandbox::is_secret_name(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    passed.sort();
    let withheld: Vec<&str> = env.keys().filter(|n| clix_sandbox::is_secret_name(n)).map(String::as_str).collect();
    if !withheld.is_empty() {
        tracing::debug!(?withheld, "exported variables with secret-looking names are not passed to the sandbox");
    }
    passed
}
