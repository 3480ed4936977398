//! The attack corpus against the real binary: what a hostile workspace can
//! make `clix` do. Canaries live outside the workspace and in the
//! environment; none may come out, and clix's own files may never be inside
//! a workspace. (The engine-level cases, the symlink race among them, are in
//! clix-engine's tests/attacks.rs; see docs/security.md.)

mod common;

use common::{clix, text};

const CANARY: &str = "canary-5e2d";

/// A workspace that is the home folder, or holds clix's config or a secret
/// store, is refused before anything runs, with what to pass instead.
#[test]
fn workspaces_that_hold_clix_files_or_secrets_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let clix_home = home.join(".clix-home");
    std::fs::create_dir_all(&clix_home).unwrap();
    std::fs::write(clix_home.join("config.toml"), format!("# {CANARY}\n")).unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();

    // The home folder itself (it holds ~/.config/clix and the secret stores).
    let out = clix(&clix_home, &home, &["run", "cat .clix-home/config.toml"]).env("HOME", &home).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(!text(&out.stdout).contains(CANARY) && !err.contains(CANARY));
    assert!(err.contains("your home folder") && err.contains("--workspace"), "{err}");

    // A folder that holds CLIX_HOME.
    let out = clix(&clix_home, &home, &["run", "true"]).env("HOME", &project).output().unwrap();
    assert!(text(&out.stderr).contains("clix's config folder"), "{}", text(&out.stderr));

    // A folder that holds one of the secret stores of the shared list.
    for store in [".git-credentials", ".npmrc", ".pypirc", ".config/gh", ".config/clix"] {
        let ws = root.path().join(format!("ws-{}", store.replace('/', "-")));
        let path = ws.join(store);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, CANARY).unwrap();
        let out = clix(&clix_home, &ws, &["run", "true"]).env("HOME", &project).output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{store} was accepted");
        assert!(text(&out.stderr).contains(&format!("contains {store}")), "{store}: {}", text(&out.stderr));
    }

    // A project folder is fine.
    let out = clix(&clix_home, &project, &["run", "echo ok"]).env("HOME", &home).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
