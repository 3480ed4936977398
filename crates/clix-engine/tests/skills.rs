//! Agent Skills through the engine: real skill folders (the person's and a
//! workspace's), the level-0 list in the `run` tool's description, `skill`
//! at each level, and scripts run in real bubblewrap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clix_engine::{Engine, EngineConfig, OsTier, SandboxSettings};
use clix_skills::SkillsConfig;

mod support;
use support::run;

const CANARY: &str = "canary-5k1ll-0ut51de";

/// Not the shared `support::Dirs`: the person's home (their skills) and
/// the workspace (its own), and a third folder no skill may read.
struct SkillHomes {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    /// Outside both: what no skill's script may read.
    outside: tempfile::TempDir,
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn script(path: &Path, text: &str) {
    write(path, text);
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn skill_md(dir: &Path, name: &str, description: &str) {
    write(&dir.join(name).join("SKILL.md"), &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"));
}

impl SkillHomes {
    /// The person's `report` and `shared`; the workspace's `probe`,
    /// `shared` (a clash), `bad` (no front matter) and `escape` (a symlink
    /// to a skill outside the workspace).
    fn new() -> SkillHomes {
        let f = SkillHomes {
            home: tempfile::tempdir().unwrap(),
            ws: tempfile::tempdir().unwrap(),
            outside: tempfile::tempdir().unwrap(),
        };
        let person = f.person_dir();
        skill_md(&person, "report", "Write the weekly report from the notes.");
        write(&person.join("report/references/notes.txt"), "notes of the person's skill\n");
        script(
            &person.join("report/scripts/show.sh"),
            "#!/bin/sh\ncat \"$CLIX_SKILL_DIR/references/notes.txt\"\necho \"args: $*\"\npwd\n\
             touch \"$CLIX_SKILL_DIR/written\" 2>/dev/null && echo skill-folder-writable || echo skill-folder-read-only\n",
        );
        skill_md(&person, "shared", "The person's own.");
        let skills = f.ws.path().join(".clix/skills");
        skill_md(&skills, "shared", "The workspace's, hidden.");
        skill_md(&skills, "probe", "Probe what a workspace's script can reach.");
        let canary = f.outside.path().join("FILE");
        let notes = person.join("report/references/notes.txt");
        script(
            &skills.join("probe/scripts/probe.sh"),
            &format!(
                "#!/bin/bash\n\
                 cat {canary} 2>/dev/null || echo no-canary\n\
                 cat {notes} 2>/dev/null || echo no-person-skill\n\
                 (exec 3<>/dev/tcp/1.1.1.1/80) 2>/dev/null && echo network || echo no-network\n\
                 echo \"home=$HOME\"\n\
                 echo made > probe-out.txt\n",
                canary = canary.display(),
                notes = notes.display()
            ),
        );
        write(&f.outside.path().join("FILE"), &format!("{CANARY}\n"));
        write(&f.ws.path().join(".agents/skills/bad/SKILL.md"), "name: bad\n(no front matter)\n");
        skill_md(f.outside.path(), "escape", "Outside the workspace.");
        std::os::unix::fs::symlink(f.outside.path().join("escape"), skills.join("escape")).unwrap();
        f
    }

    fn person_dir(&self) -> PathBuf {
        self.home.path().join("skills")
    }

    async fn engine(&self, os: bool, level0_bytes: usize) -> Engine {
        let state = self.home.path().join("state");
        Engine::new(EngineConfig {
            os: os.then(|| OsTier {
                settings: SandboxSettings::default(),
                clix_config_dir: Some(self.home.path().to_path_buf()),
                audit_log: Some(clix_audit::AuditLog::new(state.join("audit.jsonl"))),
                session_id: "skills-test".into(),
                env: Vec::new(),
            }),
            capabilities: vec![std::sync::Arc::new(SkillsConfig { person_dir: Some(self.person_dir()), level0_bytes })],
            ..EngineConfig::new(self.ws.path())
        })
        .await
        .unwrap()
    }
}

#[tokio::test]
async fn level_zero_lists_the_skills_in_the_run_tool_within_the_budget() {
    let f = SkillHomes::new();
    let engine = f.engine(false, 2048).await;
    let description = clix_engine::tool_description(engine.catalog());
    for line in [
        "  probe   Probe what a workspace's script can reach.",
        "  report  Write the weekly report",
        "  shared  The person's own.",
    ] {
        assert!(description.contains(line), "{line:?} in {description}");
    }
    for absent in ["hidden", "escape", "bad", "more:"] {
        assert!(!description.contains(absent), "{absent:?} in {description}");
    }
    assert!(description.contains("  skill "), "the skill command is offered: {description}");

    let small = f.engine(false, 60).await;
    let description = clix_engine::tool_description(small.catalog());
    assert!(description.contains("  probe ") && !description.contains("  report "), "{description}");
    assert!(description.contains("  … 2 more: `skill` lists them all"), "{description}");

    // Without skills, neither the list nor the command is offered.
    let bare = tempfile::tempdir().unwrap();
    let engine = Engine::new(EngineConfig {
        capabilities: vec![std::sync::Arc::new(SkillsConfig {
            person_dir: Some(bare.path().join("skills")),
            level0_bytes: 2048,
        })],
        ..EngineConfig::new(bare.path())
    })
    .await
    .unwrap();
    let description = clix_engine::tool_description(engine.catalog());
    assert!(!description.contains("Skills") && !description.contains("  skill "), "{description}");
}

#[tokio::test]
async fn skill_lists_reports_and_prints_each_level() {
    let f = SkillHomes::new();
    let mut engine = f.engine(false, 2048).await;
    let (out, err, code) = run(&mut engine, "skill").await;
    assert_eq!(code, 0, "{err}");
    for want in [
        "probe   workspace  Probe what",
        "report  person     Write the weekly report",
        "shared  person     The person's own.",
        "(workspace) is hidden by",
        "(person), which wins",
        "bad/SKILL.md: no front matter",
        "escape: leads outside the workspace",
    ] {
        assert!(out.contains(want), "{want:?} in {out}");
    }

    let (out, _, code) = run(&mut engine, "skill report").await;
    let md = fs::read_to_string(f.person_dir().join("report/SKILL.md")).unwrap();
    assert_eq!(code, 0);
    assert!(out.starts_with(&md) && out.contains("skill report files"), "{out}");

    let (out, _, _) = run(&mut engine, "skill report files").await;
    assert!(out.contains("references/notes.txt  (28 bytes)"), "{out}");
    assert!(out.contains("scripts/show.sh") && out.contains("runs: skill report run scripts/show.sh"), "{out}");

    let (out, _, code) = run(&mut engine, "skill report cat references/notes.txt | tr a-z A-Z").await;
    assert_eq!((out.as_str(), code), ("NOTES OF THE PERSON'S SKILL\n", 0));
    let (_, err, code) = run(&mut engine, "skill report cat ../shared/SKILL.md").await;
    assert_eq!(code, 1);
    assert!(err.contains("outside the skill's folder") && err.contains("skill report files lists"), "{err}");

    let (_, err, code) = run(&mut engine, "skill reprot").await;
    assert_eq!(code, 1);
    assert!(err.contains("no skill reprot. Did you mean report?") && err.contains("hint: skill lists"), "{err}");
    let (_, err, code) = run(&mut engine, "skill bad").await;
    assert_eq!(code, 1);
    assert!(err.contains("bad did not load") && err.contains("no front matter"), "{err}");
    let (_, err, code) = run(&mut engine, "skill report frobnicate").await;
    assert_eq!(code, 2, "{err}");
}

#[tokio::test]
async fn scripts_run_in_the_sandbox_and_a_workspace_s_reach_nothing_outside() {
    let f = SkillHomes::new();
    let mut engine = f.engine(true, 2048).await;
    let (out, err, code) = run(&mut engine, "skill report run scripts/show.sh one 'two words'").await;
    assert_eq!(code, 0, "{err}");
    let ws = f.ws.path().canonicalize().unwrap();
    assert_eq!(
        out,
        format!("notes of the person's skill\nargs: one two words\n{}\nskill-folder-read-only\n", ws.display())
    );

    let (out, err, code) = run(&mut engine, "skill probe run scripts/probe.sh | sort").await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(CANARY), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1..], ["no-canary", "no-network", "no-person-skill"], "{out}");
    let home = lines[0].strip_prefix("home=").unwrap();
    assert!(!home.is_empty() && std::env::var("HOME").map_or(true, |h| h != home), "an empty HOME: {out}");
    assert_eq!(fs::read_to_string(f.ws.path().join("probe-out.txt")).unwrap(), "made\n", "it runs in the workspace");
    let audit = fs::read_to_string(f.home.path().join("state/audit.jsonl")).unwrap();
    assert!(audit.contains("scripts/probe.sh"), "each run is audited: {audit}");

    let (_, err, code) = run(&mut engine, "skill probe run scripts/missing.sh").await;
    assert_eq!(code, 127, "{err}");
    assert!(err.contains("skill probe files lists its files"), "{err}");
}

#[tokio::test]
async fn without_a_sandbox_no_script_runs() {
    let f = SkillHomes::new();
    let mut engine = f.engine(false, 2048).await;
    let (out, err, code) = run(&mut engine, "skill probe run scripts/probe.sh").await;
    assert_eq!((out.as_str(), code), ("", 126), "{err}");
    assert!(err.contains("no sandbox") && err.contains("apt-get install bubblewrap"), "{err}");
    assert!(!f.ws.path().join("probe-out.txt").exists(), "nothing ran on the host");

    let host = SandboxSettings { mode: clix_engine::SandboxMode::Host, ..SandboxSettings::default() };
    let mut engine = Engine::new(EngineConfig {
        os: Some(OsTier {
            settings: host,
            clix_config_dir: None,
            audit_log: None,
            session_id: "skills-host".into(),
            env: Vec::new(),
        }),
        capabilities: vec![std::sync::Arc::new(SkillsConfig { person_dir: Some(f.person_dir()), level0_bytes: 2048 })],
        ..EngineConfig::new(f.ws.path())
    })
    .await
    .unwrap();
    let (_, err, code) = run(&mut engine, "skill probe run scripts/probe.sh").await;
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("would run it unsandboxed"), "{err}");
    assert!(!f.ws.path().join("probe-out.txt").exists(), "nothing ran on the host");
}
