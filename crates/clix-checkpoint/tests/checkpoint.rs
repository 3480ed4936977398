//! Checkpoints over a real folder: every change seen, shown and undone,
//! byte for byte, without touching what the person changed or anything
//! outside the workspace.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use clix_checkpoint::{CheckpointSettings, Checkpoints, diff, stat, undo};
use clix_testkit::tree_picture;
use clix_workspace::Folder;

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Folder) {
    let (state, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = ws.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/main.py"), "print('hello')\nprint('bye')\n").unwrap();
    std::fs::write(root.join("src/deep/data.bin"), [0u8, 1, 2, 3, 255]).unwrap();
    std::fs::write(root.join("README"), "readme\n").unwrap();
    std::fs::write(root.join("gone.txt"), "to be removed\n").unwrap();
    std::os::unix::fs::symlink("README", root.join("link")).unwrap();
    let folder = Folder::open(root).unwrap();
    (state, ws, folder)
}

/// A call: before, the change, after.
fn call(cp: &mut Checkpoints, line: &str, change: impl FnOnce()) -> clix_checkpoint::ChangeSet {
    cp.before_call().unwrap();
    change();
    cp.after_call(line).unwrap()
}

#[test]
fn every_change_is_seen_shown_and_undone_byte_for_byte() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    let start = tree_picture(&root);
    let mut cp = Checkpoints::open(state.path(), folder.clone(), "run-1", CheckpointSettings::default()).unwrap();

    let step1 = call(&mut cp, "sed -i s/hello/hi/ src/main.py; rm gone.txt", || {
        std::fs::write(root.join("src/main.py"), "print('hi')\nprint('bye')\n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
    });
    assert_eq!(step1.counts(), (0, 1, 1), "{step1:?}");
    let after1 = tree_picture(&root);

    let step2 = call(&mut cp, "python3 make.py", || {
        std::fs::create_dir(root.join("out")).unwrap();
        std::fs::write(root.join("out/new.sh"), "#!/bin/sh\necho new\n").unwrap();
        std::fs::set_permissions(root.join("out/new.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(root.join("README"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(root.join("src/deep/data.bin"), root.join("data.bin")).unwrap();
        std::fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("src/main.py", root.join("link")).unwrap();
    });
    assert_eq!(step2.counts(), (2, 2, 1), "{step2:?}");
    assert_eq!(step2.summary().unwrap(), "changed 5 files: +2 ~2 \u{2212}1 (clix diff run-1 --step 2)");

    // A call that changes nothing keeps nothing.
    let nothing = call(&mut cp, "ls", || {});
    assert!(nothing.is_empty() && nothing.summary().is_none());

    let store = cp.store();
    let sets = store.changes_of("run-1").unwrap();
    assert_eq!(sets.iter().map(|s| s.step).collect::<Vec<_>>(), [1, 2]);
    let shown = diff(store, &sets).unwrap();
    for expected in [
        "--- a/src/main.py\n+++ b/src/main.py\n",
        "-print('hello')\n+print('hi')\n",
        "deleted file mode 100644",
        "--- a/gone.txt\n+++ /dev/null\n",
        "new folder out/",
        "new file mode 100755",
        "+echo new\n",
        "old mode 100644\nnew mode 100600",
        "link: symlink \u{2192} README \u{2192} symlink \u{2192} src/main.py",
        "Binary files a/data.bin and b/data.bin differ (0 \u{2192} 5 bytes)",
    ] {
        assert!(shown.contains(expected), "missing {expected:?} in:\n{shown}");
    }
    let lines = stat(store, &sets).unwrap();
    assert!(lines.contains("src/main.py") && lines.contains("+1 -1"), "{lines}");

    // Undo from step 2: just after step 1.
    let report = undo(store, &folder, "run-1", 2, false).unwrap();
    assert!(report.left.is_empty(), "{report:?}");
    assert_eq!(tree_picture(&root), after1);
    // The rest of the run: the starting tree.
    let report = undo(store, &folder, "run-1", 1, false).unwrap();
    assert!(report.left.is_empty(), "{report:?}");
    assert_eq!(tree_picture(&root), start);
}

#[test]
fn a_file_the_person_changed_since_survives_undo_unless_forced() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    let mut cp = Checkpoints::open(state.path(), folder.clone(), "run-2", CheckpointSettings::default()).unwrap();
    call(&mut cp, "write README", || std::fs::write(root.join("README"), "agent's\n").unwrap());
    std::fs::write(root.join("README"), "person's\n").unwrap();
    let report = undo(cp.store(), &folder, "run-2", 1, false).unwrap();
    assert_eq!(report.left.len(), 1, "{report:?}");
    assert!(report.left[0].1.contains("changed since the agent's call"), "{report:?}");
    assert_eq!(std::fs::read_to_string(root.join("README")).unwrap(), "person's\n");

    let report = undo(cp.store(), &folder, "run-2", 1, true).unwrap();
    assert_eq!(report.backups, ["README.clix-undo-backup"]);
    assert_eq!(std::fs::read_to_string(root.join("README")).unwrap(), "readme\n");
    assert_eq!(std::fs::read_to_string(root.join("README.clix-undo-backup")).unwrap(), "person's\n");
}

#[test]
fn undo_never_leaves_the_workspace_through_a_planted_symlink() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("main.py"), "outside\n").unwrap();
    let start = tree_picture(&root);
    let mut cp = Checkpoints::open(state.path(), folder.clone(), "run-3", CheckpointSettings::default()).unwrap();
    call(&mut cp, "rm -rf src; ln -s OUTSIDE src", || {
        std::fs::remove_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("src")).unwrap();
    });
    let report = undo(cp.store(), &folder, "run-3", 1, false).unwrap();
    assert!(report.left.is_empty(), "{report:?}");
    assert_eq!(tree_picture(&root), start);
    assert_eq!(tree_picture(outside.path()).len(), 1);
    assert_eq!(std::fs::read_to_string(outside.path().join("main.py")).unwrap(), "outside\n");
}

#[test]
fn secrets_are_never_copied_and_big_files_are_named_not_kept() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    let settings = CheckpointSettings { max_file_bytes: 1000, ..CheckpointSettings::default() };
    let mut cp = Checkpoints::open(state.path(), folder, "run-4", settings).unwrap();
    let set = call(&mut cp, "make", || {
        std::fs::write(root.join(".env"), "API_KEY=canary-71\n").unwrap();
        std::fs::write(root.join("settings.py"), "AWS_KEY = 'AKIAABCDEFGHIJKLMNOP' # canary-72\n").unwrap();
        std::fs::write(root.join("big.log"), vec![b'x'; 5000]).unwrap();
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
    });
    let named: Vec<&str> = set.not_kept.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(named, [".env", "big.log", "settings.py", "target/"], "{set:?}");
    let mut pending = vec![cp.store().root().to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let text = String::from_utf8_lossy(&bytes);
                for secret in ["canary-71", "canary-72", "AKIAABCDEFGHIJKLMNOP"] {
                    assert!(!text.contains(secret), "{} holds {secret}", path.display());
                }
            }
        }
    }
    let mode = std::fs::metadata(cp.store().root()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // What the run made is removed by undo, kept or not: nothing of it is needed to go back.
    let report = undo(cp.store(), &Folder::open(&root).unwrap(), "run-4", 1, false).unwrap();
    assert!(report.left.is_empty(), "{report:?}");
    for made in [".env", "big.log", "settings.py"] {
        assert!(!root.join(made).exists(), "{made} is still there: {report:?}");
    }
}

#[test]
fn the_store_keeps_each_content_once_and_prunes_the_oldest_runs() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    let settings = CheckpointSettings { max_bytes: 4000, ..CheckpointSettings::default() };
    let mut first = Checkpoints::open(state.path(), folder.clone(), "old", settings.clone()).unwrap();
    call(&mut first, "write a", || std::fs::write(root.join("a.txt"), vec![b'a'; 1500]).unwrap());
    let mut second = Checkpoints::open(state.path(), folder.clone(), "new", settings).unwrap();
    for i in 0..3u8 {
        call(&mut second, "write b", || std::fs::write(root.join("b.txt"), vec![b'b' + i; 1500]).unwrap());
    }
    let err = second.store().changes_of("old").unwrap_err();
    assert!(err.to_string().contains("was pruned"), "{err}");
    assert_eq!(second.store().changes_of("new").unwrap().len(), 3);
    assert_eq!(second.store().resolve("last").unwrap(), "new");
}

/// The watch (inotify) and a whole listing see the same changes, call by
/// call, for every kind of change, a folder swapped for a file and a tree
/// moved away included.
#[test]
fn the_watch_sees_what_a_whole_listing_sees() {
    type Step = fn(&Path);
    let steps: &[Step] = &[
        |r| std::fs::write(r.join("src/main.py"), "changed\n").unwrap(),
        |r| std::fs::create_dir_all(r.join("new/deeper/still")).unwrap(),
        |r| std::fs::write(r.join("new/deeper/still/x.txt"), "x").unwrap(),
        |r| std::fs::rename(r.join("new"), r.join("moved")).unwrap(),
        |r| std::fs::remove_dir_all(r.join("src")).unwrap(),
        |r| std::fs::write(r.join("src"), "a file where a folder was\n").unwrap(),
        |r| std::fs::set_permissions(r.join("README"), std::fs::Permissions::from_mode(0o755)).unwrap(),
        |r| std::os::unix::fs::symlink("moved", r.join("link2")).unwrap(),
        |_| {},
    ];
    let mut seen: Vec<Vec<Vec<clix_checkpoint::Change>>> = Vec::new();
    for whole in [false, true] {
        let (state, ws, folder) = setup();
        let root = ws.path().to_path_buf();
        let mut cp = Checkpoints::open(state.path(), folder, "run-w", CheckpointSettings::default()).unwrap();
        if whole {
            cp = cp.listing_whole();
        }
        seen.push(steps.iter().map(|step| call(&mut cp, "step", || step(&root)).changes).collect());
    }
    assert_eq!(seen[0], seen[1]);
    assert!(seen[0].iter().take(8).all(|c| !c.is_empty()) && seen[0][8].is_empty(), "{:?}", seen[0]);
}

/// A plan task writes only in its places: changes elsewhere (a sibling
/// task's, running at the same time) are not its steps. clix's spills are
/// nobody's; the rest of `.clix` (a project's policy) is the project's.
#[test]
fn a_run_confined_to_its_places_keeps_only_their_changes() {
    let (state, ws, folder) = setup();
    let root = ws.path().to_path_buf();
    std::fs::create_dir_all(root.join("agents/a")).unwrap();
    std::fs::create_dir_all(root.join("agents/b")).unwrap();
    let mut cp = Checkpoints::open(state.path(), folder, "task-a", CheckpointSettings::default())
        .unwrap()
        .within(&["agents/a".into()]);
    let set = call(&mut cp, "work", || {
        std::fs::write(root.join("agents/a/out.txt"), "a").unwrap();
        std::fs::write(root.join("agents/b/out.txt"), "b").unwrap();
        std::fs::create_dir_all(root.join(".clix/out")).unwrap();
        std::fs::write(root.join(".clix/out/cmd-1.txt"), "spill").unwrap();
    });
    let paths: Vec<&str> = set.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["agents/a/out.txt"]);

    let mut whole =
        Checkpoints::open(state.path(), Folder::open(&root).unwrap(), "all", CheckpointSettings::default()).unwrap();
    let set = call(&mut whole, "policy", || {
        std::fs::write(root.join(".clix/policy.toml"), "[policy]\n").unwrap();
        std::fs::write(root.join(".clix/out/cmd-2.txt"), "spill").unwrap();
    });
    let paths: Vec<&str> = set.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, [".clix/policy.toml"]);
}
