//! Sharded runs: `--shard i/n` runs one deterministic slice of a run's
//! tasks, and [`merge`] joins the slices' results into what the whole run
//! gives.
//!
//! The unit is the task: every design and every repeat of a task run on
//! the same shard. pass@k and pass^k are computed over a task's repeats,
//! and the do-nothing run (`--solution`) and the skips are per task, so
//! each shard's own `results.json` is whole for each of its tasks, and a
//! merge is a concatenation: the merged summaries are computed over the
//! same records, in the same order, as an unsharded run's. The price is
//! granularity: a run with fewer tasks than shards leaves shards empty,
//! and the repeats of one task are never spread.
//!
//! The slice: the run's tasks (after `--filter`) sorted by id, each dealt
//! in turn to the shard with the fewest attempts so far (the lowest index
//! on a tie). Sorting makes the slice the same whatever order the suite
//! files are given in, on every machine and every run. Dealing by
//! attempts balances a run-only task (one design) against one that every
//! design runs; with equal weights it is round-robin, and since a family
//! of tasks shares an id prefix (`log_…`, `hub_…`), dealing in id order
//! spreads each family, and its cost, over the shards instead of giving
//! one shard all the slow ones. A hash of the id would keep a task on its
//! shard when other tasks come and go, which the shards of one run never
//! see (a merge refuses shards of different task sets), and it balances
//! worse on suites of tens of tasks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::attempt::AttemptOptions;
use crate::designs::Design;
use crate::report::{Mode, Results, ResultsError, SCHEMA_VERSION, note_definitions, summarize};
use crate::task::Task;

/// One of `count` slices of a run: `--shard index/count`, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which slice, 1 to `count`.
    pub index: u32,
    /// How many slices the run is cut into.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;

    /// `i/n` with 1 ≤ i ≤ n.
    fn from_str(text: &str) -> Result<Shard, String> {
        let form = "write i/n, slice i of n with 1 ≤ i ≤ n, e.g. `--shard 2/4`";
        let (index, count) = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse::<u32>().ok()?, n.parse::<u32>().ok()?)))
            .ok_or_else(|| format!("`{text}` is not a shard: {form}"))?;
        if index == 0 || index > count {
            return Err(format!("`{text}`: there is no slice {index} of {count}; {form}"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The tasks of `tasks` this shard runs, in their run order; `designs`
    /// weigh each task by the attempts it makes (see the module's doc).
    pub fn slice(&self, tasks: &[Task], designs: &[Design]) -> Vec<Task> {
        let mut sorted: Vec<&Task> = tasks.iter().collect();
        sorted.sort_by(|a, b| a.id.cmp(&b.id));
        let mut load = vec![0usize; self.count as usize];
        let mut mine = BTreeSet::new();
        for task in sorted {
            // The first of the least loaded: the lowest index on a tie.
            let lightest = (0..load.len()).min_by_key(|&i| load[i]).unwrap_or(0);
            load[lightest] += designs.iter().filter(|&&d| task.runs_in(d)).count();
            if lightest + 1 == self.index as usize {
                mine.insert(task.id.as_str());
            }
        }
        tasks.iter().filter(|t| mine.contains(t.id.as_str())).cloned().collect()
    }
}

/// What `results.json` records of a shard: which slice it is, and what
/// every slice of the run must share for [`merge`] to join them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Which slice, from 1.
    pub index: u32,
    /// How many slices the run was cut into.
    pub count: u32,
    /// The ids of this slice's tasks, in run order.
    pub tasks: Vec<String>,
    /// The ids of every task of the whole run (after `--filter`), in run
    /// order: the order of the merged records.
    pub run_tasks: Vec<String>,
    /// A digest of the whole run's task definitions: shards that read
    /// different versions of a suite differ here even when the ids agree.
    pub tasks_digest: String,
    /// A digest of the settings that shape an attempt (see
    /// [`SolutionRun::shard_settings`](crate::SolutionRun::shard_settings)
    /// and [`ModelRun::shard_settings`](crate::ModelRun::shard_settings)).
    pub settings_digest: String,
}

impl ShardRecord {
    /// The record of `shard` of the run of `run` (every task, in run
    /// order), whose slice is `slice`, with the run's `settings`.
    pub fn new(shard: Shard, run: &[Task], slice: &[Task], settings: &serde_json::Value) -> ShardRecord {
        let mut by_id: Vec<&Task> = run.iter().collect();
        by_id.sort_by(|a, b| a.id.cmp(&b.id));
        let definitions: String = by_id.iter().map(|t| format!("{}\0{}\n", t.id, t.digest)).collect();
        ShardRecord {
            index: shard.index,
            count: shard.count,
            tasks: slice.iter().map(|t| t.id.clone()).collect(),
            run_tasks: run.iter().map(|t| t.id.clone()).collect(),
            tasks_digest: clix_common::sha256_hex(definitions.as_bytes()),
            settings_digest: clix_common::sha256_hex(settings.to_string().as_bytes()),
        }
    }
}

/// The settings every shard of a run must share, as JSON for
/// [`ShardRecord::settings_digest`]: the repeats, the attempts' default
/// step and time budgets, and the agent loop's settings when a model runs.
/// Left out: where the model is served and its key, which may differ from
/// machine to machine and shape no attempt, and the budgets each task
/// sets for itself; the model and the temperature are compared on their
/// own, by name.
pub(crate) fn run_settings(
    options: &AttemptOptions,
    agent: Option<&clix_agent::AgentSettings>,
    repeat: u32,
) -> serde_json::Value {
    let mut agent = agent.and_then(|a| serde_json::to_value(a).ok());
    if let Some(serde_json::Value::Object(fields)) = &mut agent {
        for per_machine in
            ["provider", "base_url", "model", "api_key", "prices", "temperature", "max_steps", "max_wall_secs"]
        {
            fields.remove(per_machine);
        }
    }
    serde_json::json!({
        "repeat": repeat,
        "max_steps": options.max_steps,
        "timeout_secs": options.timeout.as_secs(),
        "agent": agent,
    })
}

/// A run's `results.json`, given as its folder or the file.
pub fn read_run(given: &Path) -> Result<Results, ResultsError> {
    if !given.exists() {
        return Err(ResultsError::NoSuchRun(given.to_path_buf()));
    }
    let file = if given.is_dir() { given.join("results.json") } else { given.to_path_buf() };
    Results::read(&file)
}

/// The folder of a run given as its folder or its `results.json`.
fn run_folder(given: &Path) -> &Path {
    if given.is_dir() { given } else { given.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")) }
}

/// `clix eval merge`: the shards `given` (folders or `results.json`
/// files) joined by [`merge`] into the results of the whole run, to be
/// written into `out`, which must not be a shard's own folder. A model
/// run's trajectories are copied into `out/runs` and its records point at
/// the copies; one that cannot be copied loses its link rather than point
/// into another machine's folder, and is named in the warnings returned.
pub fn merge_into(given: &[PathBuf], out: &Path) -> Result<(Results, Vec<String>), MergeError> {
    let parts = given.iter().map(|p| Ok((p.clone(), read_run(p)?))).collect::<Result<Vec<_>, MergeError>>()?;
    let mut results = merge(&parts)?;
    if let Ok(target) = out.canonicalize() {
        for shard in given {
            if run_folder(shard).canonicalize().is_ok_and(|folder| folder == target) {
                return Err(MergeError::IntoAShard(out.to_path_buf()));
            }
        }
    }
    let mut warnings = Vec::new();
    if results.mode == Mode::Model {
        warnings = gather_trajectories(&parts, &mut results, &out.join("runs"))?;
    }
    Ok((results, warnings))
}

/// Copies each attempt's trajectory from its shard's `runs/` into
/// `runs_dir` and points the merged record at the copy (the replay pages
/// are then made afresh); returns what could not be copied.
fn gather_trajectories(
    parts: &[(PathBuf, Results)],
    results: &mut Results,
    runs_dir: &Path,
) -> Result<Vec<String>, MergeError> {
    std::fs::create_dir_all(runs_dir)
        .map_err(|source| MergeError::RunsFolder { dir: runs_dir.to_path_buf(), source })?;
    let mut copied = BTreeMap::new();
    let mut warnings = Vec::new();
    for (given, part) in parts {
        for r in &part.attempts {
            // Where the shard's run wrote it may be a path on another machine; its name is in the shard's runs/.
            let Some(name) = r.trajectory.as_deref().and_then(Path::file_name) else {
                continue;
            };
            let (from, to) = (run_folder(given).join("runs").join(name), runs_dir.join(name));
            match std::fs::copy(&from, &to) {
                Ok(_) => {
                    copied.insert((r.task.clone(), r.design, r.repeat), to);
                }
                Err(e) => warnings.push(format!(
                    "cannot copy {}: {e}; the merged report has no replay of {} [{}] r{}",
                    from.display(),
                    r.task,
                    r.design,
                    r.repeat
                )),
            }
        }
    }
    for r in &mut results.attempts {
        r.trajectory = copied.remove(&(r.task.clone(), r.design, r.repeat));
    }
    Ok(warnings)
}

/// Why shards cannot be merged; each says which shards and what to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A shard's results cannot be read.
    #[error(transparent)]
    Unreadable(#[from] ResultsError),
    /// Results of a run that had no `--shard`.
    #[error(
        "{}: not the results of a shard (that run had no --shard); merge joins the results of `clix eval … --shard \
         i/n`",
        .0.display()
    )]
    NotAShard(PathBuf),
    /// No shard given.
    #[error("nothing to merge: name the result folders of every shard")]
    Nothing,
    /// Two shards of different runs.
    #[error("{a} and {b} {why}")]
    OtherRuns {
        /// One shard, as `PATH (shard i/n)`.
        a: String,
        /// The other.
        b: String,
        /// How their runs differ.
        why: String,
    },
    /// One shard given twice.
    #[error("shard {shard} is given twice: {} and {}; give each shard's folder once", a.display(), b.display())]
    Twice {
        /// `i/n`.
        shard: String,
        /// One folder.
        a: PathBuf,
        /// The other.
        b: PathBuf,
    },
    /// Shards of the run not given.
    #[error(
        "missing shard{} {}; given {}; run it (`clix eval … --shard {}`) and merge again",
        if missing.len() > 1 { "s" } else { "" },
        missing.join(", "),
        given.join(", "),
        missing[0]
    )]
    Missing {
        /// Each as `i/n` (never empty).
        missing: Vec<String>,
        /// The shards given, as `PATH (shard i/n)`.
        given: Vec<String>,
    },
    /// Two shards hold the same task's attempts.
    #[error("the shards overlap: the attempts of {task} are in {a} and in {b}; merge the shards of one run")]
    Overlap {
        /// The task.
        task: String,
        /// One shard.
        a: String,
        /// The other.
        b: String,
    },
    /// `--out` is a shard's own folder.
    #[error("--out {} is a shard's own folder; merge into a folder of its own", .0.display())]
    IntoAShard(PathBuf),
    /// The merged run's `runs/` cannot be made.
    #[error("cannot make {}: {source}", dir.display())]
    RunsFolder {
        /// The folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Joins the results of every shard of one run (each with the place it
/// was read from, for the errors) into the results of the whole run:
/// the records in the run's order, the summaries computed afresh. It
/// refuses results that are not a shard's, shards of different runs
/// (mode, model, temperature, designs, tasks, task definitions, settings,
/// number of shards), a shard given twice, overlapping
/// attempts and a missing shard, each error saying which.
pub fn merge(parts: &[(PathBuf, Results)]) -> Result<Results, MergeError> {
    let mut shards = Vec::with_capacity(parts.len());
    for (path, results) in parts {
        let Some(shard) = &results.shard else {
            return Err(MergeError::NotAShard(path.clone()));
        };
        shards.push((path, results, shard));
    }
    shards.sort_by_key(|(_, _, shard)| shard.index);
    let Some(&(first_path, first, first_shard)) = shards.first() else {
        return Err(MergeError::Nothing);
    };
    let name =
        |path: &PathBuf, shard: &ShardRecord| format!("{} (shard {}/{})", path.display(), shard.index, shard.count);
    for &(path, results, shard) in &shards[1..] {
        let (a, b) = (name(first_path, first_shard), name(path, shard));
        same_run(first, first_shard, results, shard).map_err(|why| MergeError::OtherRuns { a, b, why })?;
    }
    for pair in shards.windows(2) {
        if pair[0].2.index == pair[1].2.index {
            return Err(MergeError::Twice {
                shard: format!("{}/{}", pair[0].2.index, pair[0].2.count),
                a: pair[0].0.clone(),
                b: pair[1].0.clone(),
            });
        }
    }
    let count = first_shard.count;
    let given: BTreeSet<u32> = shards.iter().map(|(_, _, s)| s.index).collect();
    let missing: Vec<String> = (1..=count).filter(|i| !given.contains(i)).map(|i| format!("{i}/{count}")).collect();
    if !missing.is_empty() {
        let given = shards.iter().map(|(path, _, shard)| name(path, shard)).collect();
        return Err(MergeError::Missing { missing, given });
    }
    let mut owner: BTreeMap<&str, &(&PathBuf, &Results, &ShardRecord)> = BTreeMap::new();
    for part in &shards {
        for task in &part.2.tasks {
            if let Some(other) = owner.insert(task.as_str(), part) {
                return Err(MergeError::Overlap {
                    task: task.clone(),
                    a: name(other.0, other.2),
                    b: name(part.0, part.2),
                });
            }
        }
    }

    // Every task's records are on one shard, in the order its run made
    // them; putting the tasks in the run's order gives the whole run's.
    let position: BTreeMap<&str, usize> =
        first_shard.run_tasks.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let at = |task: &str| position.get(task).copied().unwrap_or(usize::MAX);
    let mut attempts: Vec<_> = shards.iter().flat_map(|(_, r, _)| r.attempts.iter().cloned()).collect();
    attempts.sort_by_key(|r| at(&r.task));
    let mut do_nothing: Vec<_> = shards.iter().flat_map(|(_, r, _)| r.do_nothing.iter().cloned()).collect();
    do_nothing.sort_by_key(|r| at(&r.task));
    let mut skipped: Vec<_> = shards.iter().flat_map(|(_, r, _)| r.skipped.iter().cloned()).collect();
    skipped.sort_by_key(|s| at(&s.task));
    let mut definition_bytes = BTreeMap::new();
    for (&design, &bytes) in shards.iter().flat_map(|(_, r, _)| &r.definition_bytes) {
        note_definitions(&mut definition_bytes, design, bytes);
    }
    Ok(Results {
        schema_version: SCHEMA_VERSION,
        mode: first.mode,
        model: first.model.clone(),
        temperature: first.temperature,
        shard: None,
        finished_unix: shards.iter().map(|(_, r, _)| r.finished_unix).max().unwrap_or_default(),
        suites: first.suites.clone(),
        designs: first.designs.clone(),
        definition_bytes,
        summary: summarize(&attempts),
        attempts,
        do_nothing,
        skipped,
    })
}

/// Whether two shards are of one run; if not, what differs, worded to
/// follow "A and B".
fn same_run(a: &Results, a_shard: &ShardRecord, b: &Results, b_shard: &ShardRecord) -> Result<(), String> {
    let mode = |r: &Results| match r.mode {
        Mode::Solution => "reference solutions (--solution)",
        Mode::Model => "a model",
    };
    if a.mode != b.mode {
        return Err(format!("are of different modes: {} against {}", mode(a), mode(b)));
    }
    if a.model != b.model {
        let model = |r: &Results| r.model.clone().unwrap_or_default();
        return Err(format!("ran different models: {} against {}", model(a), model(b)));
    }
    if a.temperature != b.temperature {
        let said = |t: Option<f64>| t.map_or("the provider's default".to_string(), |t| t.to_string());
        return Err(format!(
            "sampled at different temperatures: {} against {}",
            said(a.temperature),
            said(b.temperature)
        ));
    }
    if a_shard.count != b_shard.count {
        return Err(format!("cut the run into {} and {} shards", a_shard.count, b_shard.count));
    }
    if a.designs != b.designs {
        let names = |r: &Results| r.designs.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ");
        return Err(format!("ran different designs: {} against {}", names(a), names(b)));
    }
    let (a_tasks, b_tasks): (BTreeSet<&String>, BTreeSet<&String>) =
        (a_shard.run_tasks.iter().collect(), b_shard.run_tasks.iter().collect());
    if a_tasks != b_tasks {
        let only = |x: &BTreeSet<&String>, y: &BTreeSet<&String>| {
            let ids: Vec<&str> = x.difference(y).take(5).map(|s| s.as_str()).collect();
            if ids.is_empty() { "none".to_string() } else { ids.join(", ") }
        };
        return Err(format!(
            "ran different tasks (other suites or --filter): only in the first: {}; only in the second: {}",
            only(&a_tasks, &b_tasks),
            only(&b_tasks, &a_tasks)
        ));
    }
    if a_shard.tasks_digest != b_shard.tasks_digest {
        return Err("read different definitions of the same tasks: the suite files differ between them; run \
                    every shard from the same suite files"
            .into());
    }
    if a_shard.settings_digest != b_shard.settings_digest {
        return Err("ran with different settings (--repeat, --max-steps or the agent's settings)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::report::tests::{record, results};
    use crate::task::parse_suite;

    /// Ten tasks, three of them run-only, listed out of id order.
    fn tasks() -> Vec<Task> {
        let ids = ["log_b", "hub_a", "log_a", "csv_a", "hub_b", "json_a", "hub_c", "csv_b", "json_b", "log_c"];
        let lines: Vec<String> = ids
            .iter()
            .map(|id| {
                let tags = if id.starts_with("hub") { r#", "tags": ["run-only"]"# } else { "" };
                format!(
                    r#"{{"id": "{id}", "category": "{}", "description": "d", "prompt": "p", "expectations": [{{"check": "exit_code:0"}}]{tags}}}"#,
                    &id[..id.find('_').unwrap()]
                )
            })
            .collect();
        parse_suite(Path::new("suite.jsonl"), &lines.join("\n")).unwrap()
    }

    /// A form, and the slice it reads as or how its error begins.
    type ShardCase = (&'static str, Result<(u32, u32), &'static str>);

    #[test]
    fn shards_parse_from_i_of_n_and_bad_forms_say_the_form() {
        let cases: &[ShardCase] = &[
            ("1/1", Ok((1, 1))),
            ("2/4", Ok((2, 4))),
            ("4/4", Ok((4, 4))),
            ("0/4", Err("`0/4`: there is no slice 0 of 4")),
            ("5/4", Err("`5/4`: there is no slice 5 of 4")),
            ("1/0", Err("`1/0`: there is no slice 1 of 0")),
            ("2", Err("`2` is not a shard")),
            ("a/4", Err("`a/4` is not a shard")),
            ("-1/4", Err("`-1/4` is not a shard")),
            ("1/2/3", Err("`1/2/3` is not a shard")),
            (" 1/2", Err("` 1/2` is not a shard")),
            ("", Err("`` is not a shard")),
        ];
        for (text, want) in cases {
            match (text.parse::<Shard>(), want) {
                (Ok(shard), Ok((i, n))) => {
                    assert_eq!((shard.index, shard.count), (*i, *n), "{text}");
                    assert_eq!(shard.to_string(), *text);
                }
                (Err(e), Err(start)) => {
                    assert!(e.starts_with(start), "{text}: {e}");
                    assert!(e.ends_with("e.g. `--shard 2/4`"), "the form is said: {e}");
                }
                (got, _) => panic!("{text}: {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn the_slices_cover_the_run_once_whatever_the_order_and_balance_its_attempts() {
        let tasks = tasks();
        let designs = Design::ALL;
        let mut reversed = tasks.clone();
        reversed.reverse();
        for count in 1..=12 {
            let mut seen: Vec<String> = Vec::new();
            let mut loads = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let slice = shard.slice(&tasks, &designs);
                // The same slice whatever order the suites listed the tasks in.
                let ids = |s: &[Task]| s.iter().map(|t| t.id.clone()).collect::<BTreeSet<_>>();
                assert_eq!(ids(&slice), ids(&shard.slice(&reversed, &designs)), "{shard}");
                // In run order.
                let positions: Vec<usize> =
                    slice.iter().map(|t| tasks.iter().position(|x| x.id == t.id).unwrap()).collect();
                assert!(positions.is_sorted(), "{shard}: {positions:?}");
                loads.push(slice.iter().map(|t| designs.iter().filter(|&&d| t.runs_in(d)).count()).sum::<usize>());
                seen.extend(slice.into_iter().map(|t| t.id));
            }
            seen.sort();
            let mut all: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
            all.sort();
            assert_eq!(seen, all, "{count} shards: every task once");
            // 7 tasks × 3 designs + 3 run-only = 24 attempts; greedy dealing
            // keeps the shards within one task's attempts of each other.
            let (least, most) = (loads.iter().min().unwrap(), loads.iter().max().unwrap());
            assert!(most - least <= 3, "{count} shards: {loads:?}");
            assert_eq!(loads.iter().sum::<usize>(), 24);
        }
        // Neighbours in id order go to different shards: each family is spread.
        let first: Vec<String> =
            Shard { index: 1, count: 3 }.slice(&tasks, &designs).into_iter().map(|t| t.id).collect();
        // In id order: csv_a to 1, csv_b to 2, the three run-only hub_* (one
        // attempt each) to 3, json_a to 1, json_b to 2, log_a to 3, log_b to 1.
        assert_eq!(first, ["log_b", "csv_a", "json_a"], "in run order");
    }

    /// The records a run of `run` makes of the tasks of `slice`: each
    /// design `repeats` times, run-only tasks in `run` alone, some passing.
    fn records(run: &[Task], slice: &[Task], repeats: u32) -> Vec<crate::AttemptRecord> {
        let mut out = Vec::new();
        for (i, task) in run.iter().enumerate().filter(|(_, t)| slice.iter().any(|s| s.id == t.id)) {
            for design in Design::ALL.into_iter().filter(|&d| task.runs_in(d)) {
                for repeat in 0..repeats {
                    let passed = !(i + repeat as usize + design as usize).is_multiple_of(3);
                    let mut r = record(&task.id, &task.category, design, repeat, passed, 100 + i as u64 * 7);
                    r.wall_ms = 10 + (i as u64 * 13 + u64::from(repeat)) % 50;
                    out.push(r);
                }
            }
        }
        out
    }

    /// The size of each design's tool definitions a run of `slice` records,
    /// `run`'s larger for a (run-only) hub task.
    fn definitions(slice: &[Task]) -> BTreeMap<Design, u64> {
        let mut out = BTreeMap::new();
        for task in slice {
            for design in Design::ALL.into_iter().filter(|&d| task.runs_in(d)) {
                note_definitions(&mut out, design, if task.run_only() { 2422 } else { 1907 } + design as u64);
            }
        }
        out
    }

    /// What shard `shard` of a run of `tasks` records: its slice's records.
    fn shard_results(tasks: &[Task], shard: Shard, repeats: u32, settings: &serde_json::Value) -> Results {
        let slice = shard.slice(tasks, &Design::ALL);
        let mut r = results(records(tasks, &slice, repeats));
        r.designs = Design::ALL.to_vec();
        r.definition_bytes = definitions(&slice);
        r.finished_unix = u64::from(shard.index);
        r.shard = Some(ShardRecord::new(shard, tasks, &slice, settings));
        r
    }

    fn settings() -> serde_json::Value {
        run_settings(&AttemptOptions::default(), Some(&clix_agent::AgentSettings::default()), 3)
    }

    fn parts(tasks: &[Task], count: u32) -> Vec<(PathBuf, Results)> {
        (1..=count)
            .map(|index| {
                let shard = Shard { index, count };
                (PathBuf::from(format!("s{index}")), shard_results(tasks, shard, 3, &settings()))
            })
            .collect()
    }

    #[test]
    fn merged_shards_equal_the_whole_run() {
        let tasks = tasks();
        let mut whole = results(records(&tasks, &tasks, 3));
        whole.designs = Design::ALL.to_vec();
        whole.definition_bytes = definitions(&tasks);
        for count in [1, 2, 3, 4, 12] {
            let mut given = parts(&tasks, count);
            // In any order.
            given.reverse();
            let merged = merge(&given).unwrap();
            whole.finished_unix = u64::from(count);
            assert_eq!(merged, whole, "{count} shards");
        }
        // The summaries are the whole run's, pass@k over each task's repeats included.
        let run = whole.summary.iter().find(|s| s.design == Design::Run && s.category.is_none()).unwrap();
        assert_eq!((run.tasks, run.attempts, run.pass_at_k.len()), (10, 30, 3));
    }

    #[test]
    fn shards_of_different_runs_a_repeat_an_overlap_and_a_missing_shard_are_refused() {
        let tasks = tasks();
        type Change = fn(&mut Vec<(PathBuf, Results)>);
        let cases: &[(&str, Change, &str)] = &[
            ("not a shard", |p| p[1].1.shard = None, "s2: not the results of a shard (that run had no --shard)"),
            (
                "mixed modes",
                |p| {
                    p[1].1.mode = Mode::Solution;
                    p[1].1.model = None;
                },
                "s1 (shard 1/3) and s2 (shard 2/3) are of different modes: a model against reference solutions",
            ),
            ("other model", |p| p[2].1.model = Some("n".into()), "s3 (shard 3/3) ran different models: m against n"),
            (
                "temperature",
                |p| p[1].1.temperature = Some(0.0),
                "sampled at different temperatures: the provider's default against 0",
            ),
            (
                "shard counts",
                |p| p[1].1.shard.as_mut().unwrap().count = 4,
                "s1 (shard 1/3) and s2 (shard 2/4) cut the run into 3 and 4 shards",
            ),
            ("designs", |p| p[1].1.designs = vec![Design::Run], "ran different designs: run, bash, typed against run"),
            (
                "tasks",
                |p| p[2].1.shard.as_mut().unwrap().run_tasks.push("extra".into()),
                "ran different tasks (other suites or --filter): only in the first: none; only in the second: extra",
            ),
            (
                "definitions",
                |p| p[1].1.shard.as_mut().unwrap().tasks_digest = clix_common::sha256_hex(b"other"),
                "read different definitions of the same tasks",
            ),
            (
                "settings",
                |p| p[1].1.shard.as_mut().unwrap().settings_digest = clix_common::sha256_hex(b"other"),
                "ran with different settings",
            ),
            ("twice", |p| p[2] = (PathBuf::from("copy"), p[1].1.clone()), "shard 2/3 is given twice: s2 and copy"),
            ("missing", |p| drop(p.remove(1)), "missing shard 2/3; given s1 (shard 1/3), s3 (shard 3/3)"),
            (
                "missing two",
                |p| p.truncate(1),
                "missing shards 2/3, 3/3; given s1 (shard 1/3); run it (`clix eval … --shard 2/3`)",
            ),
            (
                "overlap",
                |p| {
                    let first = p[0].1.shard.clone().unwrap();
                    p[1].1.shard.as_mut().unwrap().tasks.push(first.tasks[0].clone());
                },
                "the shards overlap: the attempts of log_b are in s1 (shard 1/3) and in s2 (shard 2/3)",
            ),
            ("nothing", |p| p.clear(), "nothing to merge"),
        ];
        assert!(merge(&parts(&tasks, 3)).is_ok());
        for (case, change, want) in cases {
            let mut given = parts(&tasks, 3);
            change(&mut given);
            let err = merge(&given).expect_err(case);
            let variant = match &err {
                MergeError::Twice { .. } => "twice",
                MergeError::Missing { missing, .. } if missing.len() > 1 => "missing two",
                MergeError::Missing { .. } => "missing",
                MergeError::Overlap { .. } => "overlap",
                MergeError::Nothing => "nothing",
                MergeError::NotAShard(_) => "not a shard",
                _ => "other runs",
            };
            let named = ["twice", "missing", "missing two", "overlap", "nothing", "not a shard"];
            assert_eq!(variant, if named.contains(case) { case } else { "other runs" }, "{case}: {err}");
            assert!(err.to_string().contains(want), "{case}: {err}");
        }
    }

    #[test]
    fn the_settings_digest_ignores_where_the_model_is_served_only() {
        let agent = clix_agent::AgentSettings::default();
        let options = AttemptOptions::default();
        let digest_of = |agent: &clix_agent::AgentSettings, options: &AttemptOptions, repeat| {
            clix_common::sha256_hex(run_settings(options, Some(agent), repeat).to_string().as_bytes())
        };
        let base = digest_of(&agent, &options, 1);
        let elsewhere = clix_agent::AgentSettings {
            base_url: "http://10.0.0.9/v1".into(),
            api_key: clix_common::Secret::new("sk-one"),
            ..agent.clone()
        };
        assert_eq!(digest_of(&elsewhere, &options, 1), base, "served elsewhere, with another key");
        let cases = [
            digest_of(&agent, &options, 2),
            digest_of(&clix_agent::AgentSettings { look_first: false, ..agent.clone() }, &options, 1),
            digest_of(&agent, &AttemptOptions { max_steps: 4, ..options.clone() }, 1),
        ];
        for other in cases {
            assert_ne!(other, base);
        }
        assert!(
            !run_settings(&options, Some(&elsewhere), 1).to_string().contains("sk-one"),
            "no key in the digest's input"
        );
    }
}
