//! Loading rules and deciding on commands, without a shell: the built-in
//! defaults load (so every example and counterexample in them holds), load
//! errors name their file and rule, the strictest rule wins, and a
//! workspace's rules can only tighten.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_policy::{Decision, Origin, Policy, PolicySettings, RuleFile, Scope, example_context};

fn file(scope: Scope, name: &str, text: &str) -> RuleFile {
    RuleFile { origin: Origin { file: name.into(), scope }, text: text.into() }
}

fn argv(line: &str) -> Vec<String> {
    line.split_whitespace().map(String::from).collect()
}

#[test]
fn the_built_in_rules_load_and_hold_their_examples() {
    let policy = Policy::defaults().expect("the built-in rules load");
    // Not checked at every start: here.
    assert_eq!(policy.example_problems_of_all(), Vec::<String>::new(), "every built-in example holds");
    let ids: Vec<&str> = policy.rules().iter().map(|r| r.id.as_str()).collect();
    for id in [
        "rm-recursive-protected",
        "mkfs",
        "dd-to-device",
        "redirect-to-device",
        "fork-bomb",
        "git-push-force",
        "pipe-download-to-shell",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    assert!(policy.rules().iter().all(|r| !r.why.is_empty() && !r.spec.examples.is_empty()));
}

#[test]
fn decisions_on_resolved_commands() {
    let policy = Policy::defaults().unwrap();
    let ctx = example_context();
    for (line, want) in [
        ("rm -rf /", Decision::Deny),
        ("/usr/bin/rm -rf /work", Decision::Deny),
        ("rm -rf /work/ws/build", Decision::Allow),
        ("sudo -E nice rm -rf /home/user", Decision::Deny),
        ("xargs -0 rm -rf", Decision::Allow),
        ("find / -exec rm -rf {} ;", Decision::Deny),
        ("git push --force", Decision::Ask),
        ("timeout 9 git push -f", Decision::Ask),
        ("git status", Decision::Allow),
        ("dd if=/dev/zero of=/dev/sda", Decision::Deny),
        ("mkswap /dev/sdb2", Decision::Deny),
    ] {
        assert_eq!(policy.decide(&argv(line), &ctx).decision, want, "{line}");
    }
    // A script handed to a shell is read as a line of its own.
    let script = vec!["bash".to_string(), "-c".into(), "echo hi; rm -rf ~".into()];
    let verdict = policy.decide(&script, &ctx);
    assert_eq!(verdict.decision, Decision::Deny);
    assert_eq!(verdict.command, "rm -rf ~", "the inner command that decided is named");
    let eval = policy.decide(&argv("eval :(){ :|:& };:"), &ctx);
    assert_eq!(eval.decision, Decision::Deny, "a fork bomb through eval");
}

#[test]
fn the_strictest_rule_wins_and_defaults_can_be_turned_off() {
    let user = file(
        Scope::User,
        "me.toml",
        "[[rule]]\nid = \"ok-push\"\nmatch = [\"git\", \"push\"]\ndecision = \"allow\"\nwhy = \"I push a lot\"\n",
    );
    let ctx = example_context();
    let policy = Policy::load(&PolicySettings::default(), "config.toml", std::slice::from_ref(&user)).unwrap();
    assert_eq!(policy.decide(&argv("git push -f"), &ctx).decision, Decision::Ask, "allow never beats ask");
    let settings = PolicySettings { disable: vec!["git-push-force".into()], ..PolicySettings::default() };
    let policy = Policy::load(&settings, "config.toml", &[user]).unwrap();
    let verdict = policy.decide(&argv("git push -f"), &ctx);
    assert_eq!(verdict.decision, Decision::Allow);
    assert_eq!(verdict.rule.unwrap().id, "ok-push");
    let none = Policy::load(&PolicySettings { defaults: false, ..PolicySettings::default() }, "c", &[]).unwrap();
    assert!(none.rules().is_empty());
    let strict =
        Policy::load(&PolicySettings { default: Decision::Ask, ..PolicySettings::default() }, "c", &[]).unwrap();
    let verdict = strict.decide(&argv("ls"), &ctx);
    assert_eq!((verdict.decision, verdict.rule), (Decision::Ask, None), "an allowlist: no rule, the default decides");
}

#[test]
fn a_workspace_may_only_tighten() {
    let ws = file(
        Scope::Workspace,
        "/w/.clix/policy.toml",
        "[[rule]]\nprogram = \"*\"\ndecision = \"allow\"\nwhy = \"all\"\n\n[[rule]]\nid = \"no-curl\"\nprogram = \"curl\"\ndecision = \"deny\"\nwhy = \"offline project\"\n",
    );
    let policy = Policy::load(&PolicySettings::default(), "config.toml", &[ws]).unwrap();
    assert_eq!(policy.warnings().len(), 1, "{:?}", policy.warnings());
    assert!(policy.warnings()[0].contains("/w/.clix/policy.toml: rule `rule 1` ignored"), "{:?}", policy.warnings());
    assert_eq!(policy.decide(&argv("curl x"), &example_context()).decision, Decision::Deny);
    assert_eq!(policy.decide(&argv("rm -rf /"), &example_context()).decision, Decision::Deny);
}

#[test]
fn load_errors_name_the_file_and_rule_and_list_them_all() {
    let bad = file(
        Scope::User,
        "/home/me/policy.toml",
        r#"
[[rule]]
id = "wrong-example"
program = "rm"
flags = ["-r"]
decision = "deny"
why = "w"
examples = ["rm x"]
counterexamples = ["rm -r x"]

[[rule]]
id = "two-kinds"
program = "a"
match = ["b"]
decision = "deny"
why = "w"

[[rule]]
id = "bad-regex"
program = "a"
args_regex = "("
decision = "deny"
why = "w"

[[rule]]
id = "no-why"
program = "a"
decision = "ask"
why = ""
"#,
    );
    let error = Policy::load(&PolicySettings::default(), "config.toml", &[bad]).unwrap_err();
    let text = error.to_string();
    for needle in [
        "/home/me/policy.toml: rule `wrong-example`: example `rm x` does not match the rule",
        "/home/me/policy.toml: rule `wrong-example`: counterexample `rm -r x` matches the rule",
        "/home/me/policy.toml: rule `two-kinds`: give exactly one of",
        "/home/me/policy.toml: rule `bad-regex`: `args_regex`",
        "/home/me/policy.toml: rule `no-why`: `why` is empty",
    ] {
        assert!(text.contains(needle), "{needle}\nin:\n{text}");
    }
    let unknown =
        file(Scope::User, "u.toml", "[[rule]]\nprogram = \"a\"\ndecision = \"deny\"\nwhy = \"w\"\nwhen = \"always\"\n");
    let text = Policy::load(&PolicySettings::default(), "c", &[unknown]).unwrap_err().to_string();
    assert!(text.contains("u.toml: unknown field `when`"), "{text}");
}

#[test]
fn check_line_reports_each_command_and_what_is_left_to_run_time() {
    let policy = Policy::defaults().unwrap();
    let entries = policy
        .check_line("cd build && rm -rf .. ; $tool x; rm -rf \"$dir\"; echo x > /dev/sda", &example_context())
        .unwrap();
    let summary: Vec<(String, Option<Decision>, bool)> = entries
        .iter()
        .map(|e| (e.what.clone(), e.verdict.as_ref().map(|v| v.decision), e.decided_again_at_run_time))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("cd build".into(), Some(Decision::Allow), false),
            ("rm -rf ..".into(), Some(Decision::Deny), false),
            ("a command whose name is computed".into(), None, true),
            ("rm -rf".into(), Some(Decision::Allow), true),
            ("echo x".into(), Some(Decision::Allow), false),
            ("> /dev/sda".into(), Some(Decision::Deny), false),
        ]
    );
    assert!(policy.check_line("echo 'open", &example_context()).is_err(), "a parse error is never an allow");
}
