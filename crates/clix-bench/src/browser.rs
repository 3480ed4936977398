//! `browser` (issue 16): what each step costs once the browser runs, what
//! starting it costs, and how many bytes a snapshot sends the model
//! against the whole accessibility tree.

use std::path::Path;
use std::time::{Duration, Instant};

use clix_browser::{Browser, BrowserSettings, SnapshotOptions};
use clix_engine::Engine;
use clix_session::Parts;

const BUTTON_PAGE: &str = "<title>Counter</title><h1>Counter</h1>\
    <button onclick=\"document.getElementById('n').textContent = +document.getElementById('n').textContent + 1\">Add one</button>\
    <p id=n>0</p>";

pub(crate) fn browser(rounds: usize) {
    let ws = tempfile::tempdir().expect("temp dir");
    write_pages(ws.path());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        steps(ws.path(), rounds).await;
        cold_start(ws.path(), rounds.clamp(3, 10)).await;
        snapshot_sizes(ws.path()).await;
    });
}

/// An engine with the browser (and the OS tier it runs in), its home a
/// temporary folder that lives as long as the benchmark.
async fn engine(ws: &Path) -> Engine {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| tempfile::tempdir().expect("home"));
    crate::session(ws, home.path(), Parts { browser: true, ..Parts::SHELL }).engine().await.expect("engine")
}

/// p50 and p95 of each step through `run`, the browser already started.
async fn steps(ws: &Path, rounds: usize) {
    let mut engine = engine(ws).await;
    let warm = engine.run("browser open counter.html", None).await;
    assert_eq!(warm.raw.exit_code, 0, "{}", warm.text);
    let names = ["open", "snapshot -i", "click", "get text"];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        let started = Instant::now();
        let open = engine.run("browser open counter.html", None).await;
        times[0].push(started.elapsed());
        assert_eq!(open.raw.exit_code, 0, "{}", open.text);
        let started = Instant::now();
        let snap = engine.run("browser snapshot -i", None).await;
        times[1].push(started.elapsed());
        let line = snap.text.lines().find(|l| l.contains("Add one")).expect("the button");
        let at = line.find("[ref=").expect("a ref") + 5;
        let reference = &line[at..at + line[at..].find(']').expect("ref end")];
        let started = Instant::now();
        let click = engine.run(&format!("browser click @{reference}"), None).await;
        times[2].push(started.elapsed());
        assert!(click.text.contains("the page changed"), "{}", click.text);
        let started = Instant::now();
        let text = engine.run("browser get text", None).await;
        times[3].push(started.elapsed());
        assert!(text.text.contains('1'), "{}", text.text);
    }
    println!("\n### browser: warm steps through `run` (local page, {rounds} rounds)\n");
    println!("| step | p50 | p95 |");
    println!("|---|---|---|");
    for (name, mut t) in names.iter().zip(times) {
        t.sort();
        println!("| `browser {name}` | {:.1} ms | {:.1} ms |", ms(t[t.len() / 2]), ms(t[t.len() * 95 / 100]));
    }
}

/// Launching Chromium in the sandbox until it answers, and the first `open` after it.
async fn cold_start(ws: &Path, rounds: usize) {
    let sandbox = clix_sandbox::Sandbox::new(clix_sandbox::SandboxSettings::default(), ws, None, None, "bench".into());
    let downloads = ws.join(".clix/downloads");
    std::fs::create_dir_all(&downloads).expect("downloads");
    let mut launches = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let browser = Browser::launch(&BrowserSettings::default(), &sandbox, ws, &downloads).await.expect("launch");
        launches.push(started.elapsed());
        browser.close().await;
    }
    let mut first_lines = Vec::new();
    for _ in 0..rounds {
        let mut engine = engine(ws).await;
        let started = Instant::now();
        let out = engine.run("browser open counter.html", None).await;
        first_lines.push(started.elapsed());
        assert_eq!(out.raw.exit_code, 0, "{}", out.text);
    }
    launches.sort();
    first_lines.sort();
    println!("\n### browser: cold start ({rounds} rounds)\n");
    println!("| what | p50 | max |");
    println!("|---|---|---|");
    let row = |name: &str, t: &[Duration]| {
        println!("| {name} | {:.0} ms | {:.0} ms |", ms(t[t.len() / 2]), ms(t[t.len() - 1]));
    };
    row("Chromium started in bubblewrap, answering CDP", &launches);
    row("first `browser open counter.html` of a session (start + load)", &first_lines);
}

/// Bytes a model would read for three real-world-sized pages.
async fn snapshot_sizes(ws: &Path) {
    let sandbox = clix_sandbox::Sandbox::new(clix_sandbox::SandboxSettings::default(), ws, None, None, "bench".into());
    let downloads = ws.join(".clix/downloads");
    let mut browser = Browser::launch(&BrowserSettings::default(), &sandbox, ws, &downloads).await.expect("launch");
    println!("\n### browser: snapshot bytes against the whole accessibility tree\n");
    println!("| page | page HTML | AX tree (CDP JSON) | `snapshot --full` | `snapshot` (default) | `snapshot -i` |");
    println!("|---|---|---|---|---|---|");
    for (name, file) in
        [("long article", "article.html"), ("form-heavy page", "form.html"), ("table, 500 rows", "table.html")]
    {
        browser.open(file, ws, Duration::from_secs(30)).await.expect("open");
        let html = std::fs::metadata(ws.join(file)).expect("page").len();
        let tree = browser.full_tree_bytes().await.expect("tree");
        let mut bytes = Vec::new();
        for options in [
            SnapshotOptions::default(),
            SnapshotOptions { compact: true, ..Default::default() },
            SnapshotOptions { interactive: true, compact: true, ..Default::default() },
        ] {
            let snap = browser.snapshot(options, None).await.expect("snapshot");
            bytes.push(snap.lines.iter().map(|l| l.len() + 1).sum::<usize>());
        }
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            kb(html as usize),
            kb(tree),
            kb(bytes[0]),
            kb(bytes[1]),
            kb(bytes[2])
        );
    }
    browser.close().await;
}

fn kb(bytes: usize) -> String {
    format!("{:.1} KB", bytes as f64 / 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A long article (headings, paragraphs, links, a nav bar and a footer), a
/// form-heavy page (60 labelled fields of every kind) and a 500-row table.
fn write_pages(ws: &Path) {
    let write = |name: &str, body: String| std::fs::write(ws.join(name), body).expect("page");
    write("counter.html", BUTTON_PAGE.to_string());
    let mut article = String::from("<title>A long read</title><nav>");
    for i in 0..30 {
        article.push_str(&format!("<a href='#s{i}'>Section {i}</a> "));
    }
    article.push_str("</nav><main><h1>How the river changed the town</h1>");
    for s in 0..30 {
        article.push_str(&format!("<h2 id='s{s}'>Section {s}</h2>"));
        for p in 0..8 {
            article.push_str(&format!(
                "<p>Paragraph {p} of section {s}: the river rose in the spring of that year and the mills along its \
                 banks stopped; <a href='/notes/{s}/{p}'>a note</a> explains what the records say, and \
                 <em>the town's council</em> met twice before deciding what to rebuild first.</p>"
            ));
        }
    }
    article.push_str("</main><footer><a href='/about'>About</a> <a href='/contact'>Contact</a></footer>");
    write("article.html", article);
    let mut form = String::from("<title>Application</title><h1>Application form</h1><form>");
    for i in 0..60 {
        form.push_str(&match i % 5 {
            0 => format!("<label>Text field {i} <input name='t{i}' placeholder='value {i}'></label><br>"),
            1 => format!("<label><input type='checkbox' name='c{i}'> Option {i}</label><br>"),
            2 => format!(
                "<label>Choice {i} <select name='s{i}'><option>One</option><option>Two</option><option>Three</option></select></label><br>"
            ),
            3 => format!("<fieldset><legend>Radio {i}</legend><label><input type='radio' name='r{i}'> Yes</label><label><input type='radio' name='r{i}'> No</label></fieldset>"),
            _ => format!("<label>Notes {i} <textarea name='n{i}'></textarea></label><br>"),
        });
    }
    form.push_str("<button>Submit</button><button type='reset'>Clear</button></form>");
    write("form.html", form);
    let rows: String = (1..=500)
        .map(|i| {
            format!("<tr><td>{i}</td><td>item-{i}</td><td>{}</td><td><a href='/item/{i}'>open</a></td></tr>", i * 7)
        })
        .collect();
    write(
        "table.html",
        format!("<title>Items</title><table><tr><th>#</th><th>name</th><th>value</th><th></th></tr>{rows}</table>"),
    );
}
