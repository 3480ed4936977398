//! Agent Skills through the real binary: the person's skills under
//! `CLIX_HOME`, a workspace's under `.clix/skills/`, the `[skills]`
//! settings, and a workspace's script run in real bubblewrap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Env, text};

/// The person's `alpha` and `clash`; the workspace's `clash` (hidden),
/// `probe` with a script, and `broken` (a name that is not its folder's).
fn env() -> Env {
    let env = Env::new();
    let person = env.home.path().join("skills");
    skill(&person, "alpha", "First of the person's skills.");
    skill(&person, "clash", "The person's clash.");
    let ws = env.ws.path().join(".clix/skills");
    skill(&ws, "clash", "The workspace's clash.");
    skill(&ws, "probe", "Says where it runs.");
    let probe = ws.join("probe/scripts/where.sh");
    write(&probe, "#!/bin/sh\necho \"in $(pwd) as home $HOME\"\ncat \"$1\" 2>/dev/null || echo unreadable\n");
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o755)).unwrap();
    write(&ws.join("broken/SKILL.md"), "---\nname: other\ndescription: d\n---\n");
    env
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str, description: &str) {
    write(&dir.join(name).join("SKILL.md"), &format!("---\nname: {name}\ndescription: {description}\n---\nSteps.\n"));
}

#[test]
fn the_person_s_skills_are_in_the_tool_definition_within_the_configured_budget() {
    let env = env();
    let o = env.output_with_vars(&["tool-def"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let def: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let description = def["function"]["description"].as_str().unwrap();
    assert!(description.contains("  alpha  First of the person's skills.\n"), "{description}");
    assert!(description.contains("  clash  The person's clash.\n\nOutput:"), "{description}");

    write(&env.home.path().join("config.toml"), "[skills]\nlevel0_bytes = 40\n");
    let o = env.output_with_vars(&["tool-def"], &[]);
    let description = text(&o.stdout);
    assert!(description.contains("  alpha ") && !description.contains("  clash "), "{description}");
    assert!(description.contains("… 1 more: `skill` lists them all"), "{description}");

    let o = env.output_with_vars(&["tool-def"], &[("CLIX_SKILLS_LEVEL0_BYTES", "100000")]);
    assert_ne!(o.status.code(), Some(0), "a budget past the bound is refused: {}", text(&o.stderr));
    assert!(text(&o.stderr).contains("skills.level0_bytes = 100000: from 0 to 65536"), "{}", text(&o.stderr));
}

#[test]
fn skill_in_run_lists_reports_and_runs_a_workspace_script_sandboxed() {
    let env = env();
    let o = env.output_with_vars(&["run", "skill"], &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for want in [
        "alpha  person     First",
        "clash  person     The person's clash.",
        "probe  workspace  Says where it runs.",
        "(workspace) is hidden by",
        "broken/SKILL.md: `name` \"other\" is not the folder's name \"broken\"",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }

    let o = env.output_with_vars(&["run", "skill clash"], &[]);
    assert!(text(&o.stdout).starts_with("---\nname: clash\ndescription: The person's clash.\n"), "the person's wins");

    let secret = env.home.path().join("skills/alpha/SKILL.md");
    let line = format!("skill probe run scripts/where.sh {}", secret.display());
    let o = env.output_with_vars(&["run", &line], &[]);
    let out = text(&o.stdout);
    let ws = env.ws.path().canonicalize().unwrap();
    assert!(out.starts_with(&format!("in {} as home ", ws.display())), "{out}");
    assert!(out.contains("unreadable") && !out.contains("First of the person's"), "sandboxed: {out}");

    write(&env.home.path().join("config.toml"), "[skills]\nenabled = false\n");
    // Off: no `skill` of clix's (the name falls through to the OS, where
    // procps has an old program of that name).
    let o = env.output_with_vars(&["run", "skill"], &[]);
    assert!(!text(&o.stdout).contains("First of the person's skills."), "{}", text(&o.stdout));
    let o = env.output_with_vars(&["tool-def"], &[]);
    assert!(!text(&o.stdout).contains("alpha"), "{}", text(&o.stdout));
}
