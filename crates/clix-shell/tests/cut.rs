//! Security round 4, finding 12: where the in-process shell has a bound
//! (10 MiB in one expansion, the brace expansion's word count, the block it
//! reads of an endless device), a line that passes it stops with an
//! `[error]` naming the bound, never a shorter answer with exit 0. Where
//! bash's answer fits, it is bash's (the differential suite holds those).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_shell::{CommandRegistry, Shell, ShellConfig, ShellLimits, Workspace};

#[tokio::test]
async fn a_bound_passed_stops_the_line_instead_of_answering_short() {
    let ws = tempfile::tempdir().unwrap();
    let mut shell = Shell::new(ShellConfig {
        workspace: Workspace::open(ws.path()).unwrap(),
        limits: ShellLimits::default(),
        commands: CommandRegistry::new(),
        resolver: None,
        gate: None,
        start_in: None,
    })
    .await
    .unwrap();
    // 150 groups in a row: past the expansion's depth, each word made there
    // is counted as well (bashkit patch 17; uncounted, they grew until clix
    // ran out of memory).
    let deep = format!("echo {} | wc -c", "{a,b}".repeat(150));
    for (line, what) in [
        (deep.as_str(), "a brace expansion of more than 1000000 words"),
        // 20 MB of digits, each 1 doubled: past 10 MiB.
        ("x=$(seq 1 3000000 | tr -d '\\n'); y=${x//1/11}; echo ${#y}", "a replacement's result"),
        ("x=$(seq 1 3000000 | tr -d '\\n'); y=${x/#/b}; echo ${#y}", "a replacement's result"),
        ("echo {1..1001}{1..1000} | wc -w", "a brace expansion of more than 1000000 words"),
        ("x=$(head -c 6000000 /dev/zero | wc -c); echo $x", "head /dev/zero: the device never ends"),
        ("head -c 100000 /dev/urandom | wc -c", "head /dev/urandom: the device never ends"),
        ("head -n 5 /dev/zero | wc -c", "head /dev/zero: the device never ends"),
    ] {
        let raw = shell.exec(line, None).await;
        let stdout = String::from_utf8_lossy(&raw.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&raw.stderr).into_owned();
        assert_ne!(raw.exit_code, 0, "{line}: {stdout}{stderr}");
        assert!(stderr.contains("[error] stopped: ") && stderr.contains(what), "{line}: {stderr}");
        assert!(stderr.contains("sandbox bash"), "the error says where the line runs whole: {stderr}");
        assert!(!stdout.lines().any(|l| l.parse::<u64>().is_ok()), "no count at all: {line}: {stdout}");
    }
    // Within the bounds, the answers are bash's.
    for (line, want) in [
        ("echo {1..1000}{1..1000} | wc -w", "1000000\n"),
        ("head -c 1000 /dev/zero | wc -c; head -c 16 /dev/urandom | wc -c", "1000\n16\n"),
        ("x=$(seq 1 1000 | tr -d '\\n'); y=${x//1/11}; echo ${#y}", "3194\n"),
    ] {
        let raw = shell.exec(line, None).await;
        assert_eq!(String::from_utf8_lossy(&raw.stdout), want, "{line}: {}", String::from_utf8_lossy(&raw.stderr));
    }
}
