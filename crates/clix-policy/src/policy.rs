//! The rules in force, where each came from, and the decision on a command
//! or a line.

use serde::{Deserialize, Serialize};

use crate::line::{LineFacts, Unparsable, WrittenCommand, facts};
use crate::rule::{Decision, Origin, Rule, RuleSpec, Scope, Target};
use crate::unwrap::{SHELLS, invocations, reads_script_from_stdin, reentries, runs_only_itself};
use crate::words::{Context, basename};

/// The built-in rules, one data file with their examples (see its header).
const DEFAULTS: &str = include_str!("defaults.toml");
/// How the built-in rules are named in messages.
pub const DEFAULTS_FILE: &str = "built-in defaults";
/// How deep `bash -c 'eval "sh -c …"'` is read before the rest is left to run time.
const MAX_REENTRY: usize = 4;

/// The `[policy]` section of `config.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicySettings {
    /// The built-in rules are in force (each with its `why`; `clix policy list` shows them).
    pub defaults: bool,
    /// Built-in (or any) rules turned off by id.
    pub disable: Vec<String>,
    /// The decision for a command no rule matches: `allow` (the default), or
    /// `ask`/`deny` for an allowlist of `allow` rules.
    pub default: Decision,
    /// Command prefixes (`"git push"`) whose `ask` decisions run without
    /// asking; never a `deny`. `--allow WORDS` adds one for one run.
    pub allow: Vec<String>,
    /// Rules written in `config.toml` itself (`[[policy.rule]]`).
    pub rule: Vec<RuleSpec>,
}

impl Default for PolicySettings {
    fn default() -> Self {
        PolicySettings {
            defaults: true,
            disable: Vec::new(),
            default: Decision::Allow,
            allow: Vec::new(),
            rule: Vec::new(),
        }
    }
}

/// A `policy.toml` file: `[[rule]]` entries.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    rule: Vec<RuleSpec>,
}

/// Rules that could not be loaded, each naming its file and rule with the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy rules did not load:\n{}", .problems.iter().map(|p| format!("  {p}")).collect::<Vec<_>>().join("\n"))]
pub struct LoadError {
    /// One line per problem: `FILE: rule `id`: what is wrong`.
    pub problems: Vec<String>,
}

/// A rule as a decision refers to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleRef {
    /// The rule's name.
    pub id: String,
    /// Its reason.
    pub why: String,
    /// Where it is written.
    pub origin: Origin,
}

/// The decision on one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Allow, ask or deny: the strictest of the rules that matched.
    pub decision: Decision,
    /// The command the decision is about, as words joined by spaces (for
    /// a line handed back to a shell, the inner command that decided).
    pub command: String,
    /// The rule behind it; `None` when no rule matched (the policy's default).
    pub rule: Option<RuleRef>,
}

/// One entry of [`Policy::check_line`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineEntry {
    /// The decision now, on the literal words; `None` when the command's
    /// name is computed and can only be decided when it runs.
    pub verdict: Option<Verdict>,
    /// What the entry is about: a command as written, a redirection, a shape.
    pub what: String,
    /// Some word is computed, so the decision is taken again, on the
    /// expanded words, when the command runs.
    pub decided_again_at_run_time: bool,
}

/// Every rule in force, in the order they were loaded.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    by_program: ProgramIndex,
    default: Decision,
    allow: Vec<Vec<String>>,
    warnings: Vec<String>,
}

/// Which rules a command can match, by its program. Most rules name their
/// program in plain words, so a command is held against those rules and
/// the few whose program is a glob, not against every rule: this runs
/// before every command a line runs.
#[derive(Debug, Clone, Default)]
struct ProgramIndex {
    /// Rules by each program they name, in load order.
    named: std::collections::HashMap<String, Vec<usize>>,
    /// Rules whose program is a glob, in load order.
    any: Vec<usize>,
}

impl ProgramIndex {
    fn new(rules: &[Rule]) -> Self {
        let mut index = ProgramIndex::default();
        for (i, rule) in rules.iter().enumerate() {
            match rule.programs() {
                Some(programs) => {
                    for program in programs {
                        index.named.entry(program.to_string()).or_default().push(i);
                    }
                }
                None => index.any.push(i),
            }
        }
        index
    }

    /// The rules that can match `program`, in load order (which decides
    /// the rule named when two as strict match).
    fn candidates(&self, program: &str) -> impl Iterator<Item = usize> + '_ {
        let mut named = self.named.get(program).map_or(&[][..], Vec::as_slice).iter().copied().peekable();
        let mut any = self.any.iter().copied().peekable();
        std::iter::from_fn(move || match (named.peek(), any.peek()) {
            (Some(n), Some(a)) if n < a => named.next(),
            (Some(_), None) => named.next(),
            _ => any.next(),
        })
    }
}

/// One file of rules to load: where it is, whose it is, its TOML text.
#[derive(Debug, Clone)]
pub struct RuleFile {
    /// Where the rules came from (its scope decides what they may do).
    pub origin: Origin,
    /// The file's text (`[[rule]]` entries).
    pub text: String,
}

impl Policy {
    /// The built-in rules alone, with `allow` for everything else.
    pub fn defaults() -> Result<Policy, LoadError> {
        Policy::load(&PolicySettings::default(), "config.toml", &[])
    }

    /// The rules of `settings` (found in `config_file`), then of `files` in
    /// order, after the built-in ones unless turned off. Every problem of
    /// every file is reported at once; a workspace's `allow` rules are left
    /// out with a warning.
    pub fn load(settings: &PolicySettings, config_file: &str, files: &[RuleFile]) -> Result<Policy, LoadError> {
        let mut specs: Vec<(Origin, usize, RuleSpec)> = Vec::new();
        let mut problems = Vec::new();
        if settings.defaults {
            let origin = Origin { file: DEFAULTS_FILE.into(), scope: Scope::Defaults };
            match toml::from_str::<PolicyFile>(DEFAULTS) {
                Ok(file) => specs.extend(file.rule.into_iter().enumerate().map(|(i, r)| (origin.clone(), i + 1, r))),
                Err(e) => problems.push(format!("{DEFAULTS_FILE}: {e}")),
            }
        }
        let config = Origin { file: config_file.into(), scope: Scope::User };
        specs.extend(settings.rule.iter().cloned().enumerate().map(|(i, r)| (config.clone(), i + 1, r)));
        for file in files {
            match toml::from_str::<PolicyFile>(&file.text) {
                Ok(parsed) => {
                    specs.extend(parsed.rule.into_iter().enumerate().map(|(i, r)| (file.origin.clone(), i + 1, r)))
                }
                Err(e) => problems.push(format!("{}: {}", file.origin.file, e.message())),
            }
        }
        let mut rules = Vec::new();
        let mut warnings = Vec::new();
        for (origin, index, spec) in specs {
            let file = origin.file.clone();
            let label = spec.id.clone().unwrap_or_else(|| format!("rule {index}"));
            if settings.disable.contains(&label) {
                continue;
            }
            if origin.scope == Scope::Workspace && spec.decision == Decision::Allow {
                warnings.push(format!(
                    "{file}: rule `{label}` ignored: a workspace's own policy may only add deny and ask rules"
                ));
                continue;
            }
            match Rule::compile(spec, index, origin) {
                Ok(rule) => rules.push(rule),
                Err(e) => problems.push(format!("{file}: rule `{label}`: {e}")),
            }
        }
        for id in &settings.disable {
            if !rules.iter().any(|r| &r.id == id) && !DEFAULTS.contains(&format!("id = \"{id}\"")) {
                warnings.push(format!("{config_file}: [policy] disable names `{id}`, which no rule has"));
            }
        }
        let allow = settings.allow.iter().map(|a| a.split_whitespace().map(String::from).collect()).collect();
        let by_program = ProgramIndex::new(&rules);
        let policy = Policy { rules, by_program, default: settings.default, allow, warnings };
        // The person's and the workspace's rules are held to their examples
        // here; the built-in ones are clix's, held to theirs by its tests
        // (`example_problems_of_all`): checking them at every start cost
        // 2 ms of each `clix run`.
        let own = policy.rules.iter().filter(|r| r.origin.scope != Scope::Defaults);
        problems.extend(own.flat_map(|r| policy.example_problems(r)));
        if problems.is_empty() { Ok(policy) } else { Err(LoadError { problems }) }
    }

    /// Every rule's examples that do not match it and counterexamples that
    /// do, the built-in rules' too.
    pub fn example_problems_of_all(&self) -> Vec<String> {
        self.rules.iter().flat_map(|r| self.example_problems(r)).collect()
    }

    /// Every rule in force.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The decision for commands no rule matches.
    pub fn default_decision(&self) -> Decision {
        self.default
    }

    /// The prefixes whose `ask` decisions run without asking (`allow`, `--allow`).
    pub fn allowed_prefixes(&self) -> &[Vec<String>] {
        &self.allow
    }

    /// What loading left out, and why.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether the folder a command runs in can change its decision: some
    /// rule about its program asks where an operand leads, or it runs
    /// other commands. Most commands' cannot, and are decided without it.
    pub(crate) fn placing_matters(&self, argv: &[String]) -> bool {
        let program = argv.first().map_or("", |first| basename(first));
        !runs_only_itself(program) || self.by_program.candidates(program).any(|i| self.rules[i].reads_operands())
    }

    /// The decision on one command about to run: its resolved name and
    /// expanded arguments, looked through wrappers, `xargs` and `find
    /// -exec`, and into a literal script handed to `bash -c`/`sh -c`/`eval`.
    pub fn decide(&self, argv: &[String], ctx: &Context) -> Verdict {
        self.decide_within(argv, ctx, 0)
    }

    /// The rules that match one invocation, in load order: only those that
    /// name its program, and those whose program is a glob.
    fn matching_rules<'a>(&'a self, argv: &'a [String], ctx: &'a Context) -> impl Iterator<Item = &'a Rule> + 'a {
        let program = argv.first().map_or("", |first| basename(first));
        self.by_program
            .candidates(program)
            .map(|i| &self.rules[i])
            .filter(move |rule| rule.matches_program(program, argv, ctx))
    }

    fn decide_within(&self, argv: &[String], ctx: &Context, depth: usize) -> Verdict {
        let program = argv.first().map_or("", |first| basename(first));
        if runs_only_itself(program) {
            // The common case, on every command a line runs: no copies, only
            // the rules about this program.
            let mut strictest: Option<&Rule> = None;
            for rule in self.matching_rules(argv, ctx) {
                if strictest.is_none_or(|s| rule.decision > s.decision) {
                    strictest = Some(rule);
                }
            }
            return Verdict {
                decision: strictest.map_or(self.default, |rule| rule.decision),
                command: argv.join(" "),
                rule: strictest.map(rule_ref),
            };
        }
        let command = argv.join(" ");
        let mut best = Verdict { decision: self.default, command: command.clone(), rule: None };
        let mut matched = false;
        for inner in invocations(argv) {
            for rule in self.matching_rules(&inner, ctx) {
                if !matched || rule.decision > best.decision {
                    best = Verdict { decision: rule.decision, command: command.clone(), rule: Some(rule_ref(rule)) };
                    matched = true;
                }
            }
            if depth >= MAX_REENTRY {
                continue;
            }
            for script in reentries(&inner, ctx) {
                let Ok(facts) = facts(&script) else { continue };
                for nested in self.line_verdicts(&facts, ctx, depth + 1) {
                    if nested.rule.is_some() && (!matched || nested.decision > best.decision) {
                        best = nested;
                        matched = true;
                    }
                }
            }
        }
        best
    }

    /// What `clix policy check` shows: each command of the line with the
    /// decision it gets now, each redirection and shape a rule decides, all
    /// without running anything. `Err` when the line does not parse.
    pub fn check_line(&self, line: &str, ctx: &Context) -> Result<Vec<LineEntry>, Unparsable> {
        let facts = facts(line)?;
        let mut entries: Vec<LineEntry> = placed_commands(&facts, ctx)
            .into_iter()
            .filter(|p| p.command.name.is_some() || !p.command.args.is_empty())
            .map(|p| match p.command.literal_argv() {
                Some(argv) => LineEntry {
                    verdict: Some(self.decide(&argv, &p.ctx)),
                    what: argv.join(" "),
                    decided_again_at_run_time: p.command.is_partly_dynamic(),
                },
                None => LineEntry {
                    verdict: None,
                    what: "a command whose name is computed".into(),
                    decided_again_at_run_time: true,
                },
            })
            .collect();
        let structure = self.structure_verdicts(&facts).into_iter().chain(self.fed_script_verdicts(&facts, ctx, 0));
        entries.extend(structure.map(|v| LineEntry {
            what: v.command.clone(),
            verdict: Some(v),
            decided_again_at_run_time: false,
        }));
        Ok(entries)
    }

    /// The decision on what the run-time checks cannot see, taken before
    /// the line runs: redirections onto devices, shapes, commands named by
    /// a path (`/bin/rm`, `./rm`, which the shell runs without its hook),
    /// commands with a glob (the hook sees `rm -rf *` expanded, file by
    /// file), and commands after the line's own `cd` (`cd .. && rm -rf ws`,
    /// whose folder the hook cannot place), judged where the `cd`s lead from
    /// `ctx.cwd`. `Ok(None)` when nothing there needs more than an allow.
    pub fn prescreen(&self, line: &str, ctx: &Context) -> Result<Option<Verdict>, Unparsable> {
        // Each thing looked for here needs one of these in the text: a
        // line without any, like most, is not parsed a second time.
        let names_a_shell = || line.split([' ', '\t', '\n', '|', ';', '&', '(']).any(|w| SHELLS.contains(&basename(w)));
        if !line.contains(['>', '<', '(', '/', '*', '?', '['])
            && !["function", "curl", "wget", "cd"].iter().any(|w| line.contains(w))
            && !names_a_shell()
        {
            return Ok(None);
        }
        let facts = facts(line)?;
        let mut verdicts = self.structure_verdicts(&facts);
        verdicts.extend(self.fed_script_verdicts(&facts, ctx, 0));
        for placed in placed_commands(&facts, ctx) {
            let Some(argv) = &placed.argv() else { continue };
            let by_path = argv[0].contains('/');
            let globbed = argv[1..].iter().any(|w| w.contains(['*', '?', '[']));
            let verdict = self.decide(argv, &placed.ctx);
            // After a `cd` only what its folder changes: the hook decides
            // the rest when the command runs (and asks only once).
            let moved = placed.after_cd && verdict.decision > self.decide(argv, &ctx.at(None)).decision;
            if by_path || globbed || moved {
                verdicts.push(verdict);
            }
        }
        Ok(verdicts.into_iter().filter(|v| v.decision != Decision::Allow).max_by_key(|v| v.decision))
    }

    /// The commands of `line` as written, each whole (for a line that runs
    /// without the shell's hook: every word must be literal). `Err` when
    /// the line does not parse.
    pub fn written_commands(&self, line: &str) -> Result<Vec<Vec<String>>, Unparsable> {
        Ok(facts(line)?.commands.iter().filter(|c| !c.is_partly_dynamic()).filter_map(|c| c.literal_argv()).collect())
    }

    /// Every decision a rule takes on a line's commands, redirections and shapes.
    fn line_verdicts(&self, facts: &LineFacts, ctx: &Context, depth: usize) -> Vec<Verdict> {
        let mut verdicts = self.structure_verdicts(facts);
        verdicts
            .extend(facts.commands.iter().filter_map(|c| c.literal_argv()).map(|a| self.decide_within(&a, ctx, depth)));
        verdicts.extend(self.fed_script_verdicts(facts, ctx, depth));
        verdicts
    }

    /// The decisions on scripts a line feeds a shell on its stdin (`sh <
    /// wipe.sh`, `cat wipe.sh | bash`): a shell with no script of its own
    /// in the line, and files the line reads with `<` or `cat`, read
    /// through the context. Only rules decide (a script no rule refuses is
    /// allowed, its commands checked as they run).
    fn fed_script_verdicts(&self, line: &LineFacts, ctx: &Context, depth: usize) -> Vec<Verdict> {
        if depth >= MAX_REENTRY || ctx.files.is_none() {
            return Vec::new();
        }
        if !line.commands.iter().filter_map(|c| c.literal_argv()).any(|argv| reads_script_from_stdin(&argv)) {
            return Vec::new();
        }
        let cat_operands = line
            .commands
            .iter()
            .filter_map(|c| c.literal_argv())
            .filter(|argv| basename(&argv[0]) == "cat")
            .flat_map(|argv| argv.into_iter().skip(1).filter(|a| !a.starts_with('-')).collect::<Vec<_>>());
        let sources: Vec<String> = line.read_sources.iter().cloned().chain(cat_operands).collect();
        let mut verdicts = Vec::new();
        for script in sources.iter().filter_map(|file| ctx.script(file)) {
            let Ok(inner) = facts(&script) else { continue };
            verdicts.extend(self.line_verdicts(&inner, ctx, depth + 1).into_iter().filter(|v| v.rule.is_some()));
        }
        verdicts
    }

    /// Redirection and shape rules on a line.
    fn structure_verdicts(&self, facts: &LineFacts) -> Vec<Verdict> {
        let mut out = Vec::new();
        for rule in &self.rules {
            for target in facts.write_targets.iter().filter(|t| rule.matches_redirect(t)) {
                out.push(Verdict {
                    decision: rule.decision,
                    command: format!("> {target}"),
                    rule: Some(rule_ref(rule)),
                });
            }
            for (_, words) in facts.shapes.iter().filter(|(shape, _)| rule.shape() == Some(*shape)) {
                out.push(Verdict { decision: rule.decision, command: words.clone(), rule: Some(rule_ref(rule)) });
            }
        }
        out
    }

    /// Whether `rule` decides `line` (a rule's example or counterexample).
    fn rule_decides(&self, rule: &Rule, line: &str, ctx: &Context) -> Result<bool, Unparsable> {
        let facts = facts(line)?;
        Ok(match &rule.target {
            Target::Command { .. } => placed_commands(&facts, ctx).iter().any(|placed| {
                placed
                    .argv()
                    .is_some_and(|argv| invocations(&argv).iter().any(|i| rule.matches_command(i, &placed.ctx)))
            }),
            Target::Redirect(_) => facts.write_targets.iter().any(|t| rule.matches_redirect(t)),
            Target::Shape(shape) => facts.shapes.iter().any(|(s, _)| s == shape),
        })
    }

    /// The examples that do not match and the counterexamples that do.
    fn example_problems(&self, rule: &Rule) -> Vec<String> {
        let ctx = example_context();
        let place = format!("{}: rule `{}`", rule.origin.file, rule.id);
        let mut problems = Vec::new();
        for (lines, wanted, word) in
            [(&rule.spec.examples, true, "example"), (&rule.spec.counterexamples, false, "counterexample")]
        {
            for line in lines {
                match self.rule_decides(rule, line, &ctx) {
                    Ok(got) if got == wanted => {}
                    Ok(_) if wanted => problems.push(format!("{place}: example `{line}` does not match the rule")),
                    Ok(_) => problems.push(format!("{place}: counterexample `{line}` matches the rule")),
                    Err(e) => problems.push(format!("{place}: {word} `{line}` is not a valid line: {e}")),
                }
            }
        }
        problems
    }
}

/// The context examples are read in: a workspace `/work/ws` and home
/// `/home/user`, the line starting in the workspace.
pub fn example_context() -> Context {
    Context::new("/work/ws", "/home/user").at(Some("/work/ws".into()))
}

/// A command of a line, and the context it runs in.
struct Placed<'a> {
    command: &'a WrittenCommand,
    /// `ctx` with the folder the command runs in, as far as the line's own
    /// literal `cd`s tell from `ctx.cwd` (unknown after any other `cd`).
    ctx: Context,
    /// Whether a `cd` of the line came before it.
    after_cd: bool,
}

impl Placed<'_> {
    /// Its words, when all are literal, unless it is a `cd`.
    fn argv(&self) -> Option<Vec<String>> {
        self.command.literal_argv().filter(|argv| argv[0] != "cd")
    }
}

/// The commands of `facts`, each placed where it runs.
fn placed_commands<'a>(facts: &'a LineFacts, ctx: &Context) -> Vec<Placed<'a>> {
    let mut here = ctx.cwd.clone();
    let mut after_cd = false;
    let mut placed = Vec::new();
    for command in &facts.commands {
        placed.push(Placed { command, ctx: ctx.at(here.clone()), after_cd });
        if command.name.as_deref() == Some("cd") {
            after_cd = true;
            here = match (here, command.literal_argv()) {
                (Some(from), Some(argv)) if !command.is_partly_dynamic() => {
                    ctx.cd(&from, argv.get(1).map(String::as_str))
                }
                _ => None,
            };
        }
    }
    placed
}

fn rule_ref(rule: &Rule) -> RuleRef {
    RuleRef { id: rule.id.clone(), why: rule.why.clone(), origin: rule.origin.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program index must give what holding the command against every
    /// rule gives: the same rules in the same order for every invocation
    /// (wrappers included, whose inner commands are decided the same way),
    /// and the same decision and rule from `decide`, for every word of every
    /// built-in rule's examples and counterexamples as a program, and with a
    /// glob rule loaded beside them.
    #[test]
    fn the_program_index_decides_as_a_scan_of_every_rule() {
        let glob = RuleSpec {
            id: Some("mkfs-any".into()),
            decision: Decision::Ask,
            why: "a test rule whose program is a glob".into(),
            matches: vec![crate::rule::Word::One("mk*".into())],
            ..RuleSpec::default()
        };
        let settings = PolicySettings { rule: vec![glob], ..PolicySettings::default() };
        let policy = Policy::load(&settings, "config.toml", &[]).expect("rules load");
        let ctx = Context::new("/ws", "/home/u");
        let lines: Vec<String> =
            policy.rules.iter().flat_map(|r| r.spec.examples.iter().chain(&r.spec.counterexamples)).cloned().collect();
        assert!(lines.len() > 20, "the built-in rules carry their examples");
        let (mut checked, mut wrapped) = (0, 0);
        for line in &lines {
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            for start in 0..words.len() {
                let argv = &words[start..];
                let scanned: Vec<&Rule> = policy.rules.iter().filter(|r| r.matches_command(argv, &ctx)).collect();
                let indexed: Vec<&Rule> = policy.matching_rules(argv, &ctx).collect();
                let ids = |rules: &[&Rule]| rules.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
                assert_eq!(ids(&indexed), ids(&scanned), "{argv:?}");
                checked += 1;
                if !runs_only_itself(basename(&argv[0])) {
                    wrapped += 1;
                    continue;
                }
                let strictest = scanned.iter().fold(None::<&Rule>, |best, rule| {
                    if best.is_none_or(|b| rule.decision > b.decision) { Some(rule) } else { best }
                });
                let verdict = policy.decide(argv, &ctx);
                assert_eq!(verdict.decision, strictest.map_or(policy.default, |r| r.decision), "{argv:?}");
                assert_eq!(verdict.rule.map(|r| r.id), strictest.map(|r| r.id.clone()), "{argv:?}");
            }
        }
        assert!(wrapped > 0, "no wrapped command among the examples");
        assert!(checked > 50, "only {checked} commands checked");
    }
}
