//! The one list of secret stores: folders and files under a home folder
//! that hold credentials.
//!
//! Three rules read it: a workspace may not lie inside one
//! ([`crate::check`]); inside a workspace, one at any depth is hidden from
//! the agent ([`secret_store_in`], applied by [`crate::Folder`]); and the
//! sandbox never mounts one, and covers those inside what it mounts
//! (clix-sandbox). One list, so the rules cannot drift apart.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// Secret stores, relative to a home folder.
pub const SECRET_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".docker",
    ".kube",
    ".gcloud",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".git-credentials",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".gem/credentials",
    ".m2/settings.xml",
    ".password-store",
    ".local/share/keyrings",
    ".config/clix",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
];

/// The secret store that `rel` (a path relative to a workspace) is or lies
/// inside, at any depth: `.npmrc`, `web/.npmrc`, `.aws/config` and
/// `x/.config/gh/hosts.yml` are all in one.
pub fn secret_store_in(rel: &Path) -> Option<&'static str> {
    // Every store starts with a dot-name: most paths have none and cost one pass.
    if !has_dot_name(rel) {
        return None;
    }
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    SECRET_STORES.iter().copied().find(|store| {
        let names: Vec<&str> = store.split('/').collect();
        parts.windows(names.len()).any(|window| window.iter().zip(&names).all(|(part, name)| *part == OsStr::new(name)))
    })
}

/// Whether a name of `path` starts with a dot, as every store's first does.
pub(crate) fn has_dot_name(path: &Path) -> bool {
    path.components().any(|c| matches!(c, Component::Normal(part) if part.as_encoded_bytes().first() == Some(&b'.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_found_at_any_depth_and_only_as_whole_names() {
        let cases: &[(&str, Option<&str>)] = &[
            (".npmrc", Some(".npmrc")),
            ("web/.npmrc", Some(".npmrc")),
            ("./a/../.aws/config", Some(".aws")),
            ("x/.config/gh/hosts.yml", Some(".config/gh")),
            (".config/ghx", None),
            (".config", None),
            ("gh/.config", None),
            (".npmrc.example", None),
            ("src/main.rs", None),
            (".", None),
        ];
        for (path, expected) in cases {
            assert_eq!(secret_store_in(Path::new(path)), *expected, "{path}");
        }
    }
}
