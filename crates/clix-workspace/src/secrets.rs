//! The one list of secret stores: folders and files under a home folder
//! that hold credentials.
//!
//! Two rules read it: a workspace may not contain any of them nor lie inside
//! one ([`crate::check`]), and the sandbox never mounts them (clix-sandbox).
//! One list, so the two rules cannot drift apart.

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
