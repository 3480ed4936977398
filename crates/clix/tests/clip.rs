//! `clip` environments come from the person's config only: `clix config
//! show` lists them, the `run` tool describes them, a workspace's `.clix/`
//! cannot add one, and a wrong entry is a clear error.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use common::{clix, peak_rss_mib, text};

const ENTRY: &str = "[[clip]]\nname = \"scratch\"\ndescription = \"a second sandboxed tree\"\nkind = \"local\"\n";

#[test]
fn environments_come_from_the_persons_config_and_are_described() {
    let (home, ws, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = format!("{ENTRY}path = \"{}\"\n", tree.path().display());
    std::fs::write(home.path().join("config.toml"), config).unwrap();

    let out = clix(home.path(), ws.path(), &["config", "show"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let row = shown.lines().find(|l| l.starts_with("clip ")).unwrap();
    assert!(row.contains("name = \"scratch\"") && row.contains("kind = \"local\""), "{row}");
    assert!(row.contains("# file "), "{row}");

    let out = clix(home.path(), ws.path(), &["tool-def", "--format", "openai"]).output().unwrap();
    let def: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let description = def["function"]["description"].as_str().unwrap();
    assert!(description.contains("Environments (clip <name>"), "{description}");
    assert!(description.contains("scratch  a second sandboxed tree"), "{description}");
    assert!(description.contains("  clip "), "clip is advertised with its environments");

    std::fs::write(tree.path().join("hello.txt"), "from the other tree\n").unwrap();
    let out = clix(home.path(), ws.path(), &["run", "--raw", "clip scratch 'cat hello.txt'"]).output().unwrap();
    assert_eq!(text(&out.stdout), "from the other tree\n", "{}", text(&out.stderr));
}

#[test]
fn without_environments_the_run_description_says_nothing_of_them() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = clix(home.path(), ws.path(), &["tool-def", "--format", "openai"]).output().unwrap();
    let def: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let description = def["function"]["description"].as_str().unwrap();
    assert!(!description.contains("Environments"), "{description}");
    assert!(!description.contains("\n  clip "), "{description}");
    let out = clix(home.path(), ws.path(), &["run", "clip list"]).output().unwrap();
    assert!(text(&out.stdout).contains("no environments; a person declares them as [[clip]] entries"));
}

#[test]
fn a_workspace_cannot_declare_an_environment() {
    let (home, ws, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let planted = format!("{ENTRY}path = \"{}\"\n", tree.path().display()).replace("scratch", "planted");
    std::fs::create_dir_all(ws.path().join(".clix")).unwrap();
    for file in ["config", "config.toml"] {
        std::fs::write(ws.path().join(".clix").join(file), &planted).unwrap();
    }
    std::fs::write(ws.path().join("config.toml"), &planted).unwrap();

    let out = clix(home.path(), ws.path(), &["run", "clip list"]).output().unwrap();
    let listed = text(&out.stdout);
    assert!(!listed.contains("planted"), "{listed}");
    assert!(listed.contains("no environments"), "{listed}");
    let out = clix(home.path(), ws.path(), &["run", "clip planted 'echo reached'"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127), "{}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("reached"));
    let out = clix(home.path(), ws.path(), &["config", "show"]).output().unwrap();
    assert!(!text(&out.stdout).contains("planted"));
}

#[test]
fn a_wrong_entry_is_a_clear_error_naming_what_to_fix() {
    let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let rows = [
        // Checked when the file loads, named as the file's other errors are.
        ("[[clip]]\nname = \"b\"\nkind = \"ssh\"\n", "clip[0] = \"b\": kind ssh needs `host`"),
        ("[[clip]]\nname = \"b\"\nkind = \"ssh\"\nhots = \"x\"\n", "unknown field `hots`"),
        (
            "[[clip]]\nname = \"b\"\nkind = \"docker\"\ncontainer = \"c\"\n",
            "use one of ssh, container, kubernetes, local",
        ),
    ];
    for (config, want) in rows {
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let out = clix(home.path(), ws.path(), &["run", "echo hi"]).output().unwrap();
        assert!(!out.status.success(), "{config}");
        let err = text(&out.stderr);
        assert!(err.contains(want), "{config}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Issue 28, finding 13: `clip pull` read each file whole into memory (an
/// 858 MB file took clix to 906 MB). Copies are streamed now: pulling a
/// 384 MiB file keeps clix's peak resident memory far below the file's size.
#[test]
fn a_pull_streams_the_file_and_memory_stays_flat() {
    let (home, ws, tree) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = format!("{ENTRY}path = \"{}\"\n", tree.path().display());
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    const SIZE: u64 = 384 << 20;
    std::fs::File::create(tree.path().join("big.bin")).unwrap().set_len(SIZE).unwrap();
    let (code, peak_mib) = peak_rss_mib(clix(home.path(), ws.path(), &["run", "--raw", "clip scratch pull big.bin"]));
    assert_eq!(code, Some(0), "clix failed");
    assert_eq!(std::fs::metadata(ws.path().join("big.bin")).unwrap().len(), SIZE);
    assert!(peak_mib < 192, "clix peaked at {peak_mib} MiB pulling a {} MiB file", SIZE >> 20);
}
