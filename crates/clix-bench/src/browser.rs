//! `browser` (issue 16): what each step costs once the browser runs, what
//! starting it costs, and how many bytes a snapshot (and `read`) sends the
//! model against the whole accessibility tree; issue 34's subcommands
//! (state, upload, pdf, read, diff, console, dialogs, network, frames) warm.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
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
        parity(ws.path(), rounds).await;
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

/// A page with something for each of issue 34's subcommands: a file
/// input, text a button changes, a console line and a same-origin frame.
const PARITY_PAGE: &str = "<title>Parity</title><h1>Parity</h1><p>Some text to read, with <a href='/x'>a link</a>.</p>\
    <label>Attach <input type=file></label>\
    <button onclick=\"document.getElementById('n').textContent = +document.getElementById('n').textContent + 1\">Add one</button>\
    <p id=n>0</p><iframe src='/frame.html' title='Inner'></iframe><script>console.log('ready')</script>";

/// p50 and p95 of issue 34's subcommands through `run`, warm, on a page
/// served on 127.0.0.1 (cookies and storage need a web origin). A step
/// the browser command does not have (yet) is left out of the table.
async fn parity(ws: &Path, rounds: usize) {
    std::fs::write(ws.join("parity.html"), PARITY_PAGE).expect("page");
    std::fs::write(ws.join("frame.html"), "<title>Inner</title><p>Inside the frame</p>").expect("frame");
    std::fs::write(ws.join("upload.txt"), "a file to upload\n").expect("upload");
    let url = format!("{}/parity.html", serve(ws));
    let mut engine = engine(ws).await;
    let open = engine.run(&format!("browser open {url} && browser storage set k v"), None).await;
    assert_eq!(open.raw.exit_code, 0, "{}", open.text);
    let steps = [
        "cookies set session 0123456789",
        "cookies",
        "storage set theme dark",
        "storage get",
        "state save .clix/bench-state.json",
        "upload @FILE upload.txt",
        "pdf .clix/bench.pdf",
        "read",
        "diff",
        "console",
        "errors",
        "requests",
        "dialog dismiss",
        "frame",
        // The page is on the saved origin: its storage is written in place.
        "state load .clix/bench-state.json",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); steps.len()];
    for _ in 0..rounds {
        let snap = engine.run(&format!("browser open {url} >/dev/null && browser snapshot -i"), None).await;
        assert_eq!(snap.raw.exit_code, 0, "{}", snap.text);
        let line = snap.text.lines().find(|l| l.contains("Attach")).expect("the file input");
        let at = line.find("[ref=").expect("a ref") + 5;
        let file = &line[at..at + line[at..].find(']').expect("ref end")];
        for (i, step) in steps.iter().enumerate() {
            let line = format!("browser {}", step.replace("@FILE", &format!("@{file}")));
            let started = Instant::now();
            let out = engine.run(&line, None).await;
            let took = started.elapsed();
            assert_eq!(out.raw.exit_code, 0, "{line}: {}", out.text);
            times[i].push(took);
        }
    }
    // A load into a blank tab (as after a restart): the storage goes through the stand-in page.
    let mut blank = Vec::new();
    for _ in 0..rounds {
        let new = engine.run("browser tabs new", None).await;
        assert_eq!(new.raw.exit_code, 0, "{}", new.text);
        let started = Instant::now();
        let out = engine.run("browser state load .clix/bench-state.json", None).await;
        blank.push(started.elapsed());
        assert!(out.raw.exit_code == 0 && !out.text.contains("new tab"), "{}", out.text);
        let closed = engine.run("browser tabs close 2", None).await;
        assert_eq!(closed.raw.exit_code, 0, "{}", closed.text);
    }
    println!("\n### browser: issue 34's subcommands warm through `run` (page on 127.0.0.1, {rounds} rounds)\n");
    println!("| step | p50 | p95 |");
    println!("|---|---|---|");
    for (step, mut t) in steps.iter().zip(times) {
        t.sort();
        let shown = step.replace("@FILE", "@eN");
        println!("| `browser {shown}` | {:.1} ms | {:.1} ms |", ms(t[t.len() / 2]), ms(t[t.len() * 95 / 100]));
    }
    blank.sort();
    let (p50, p95) = (ms(blank[blank.len() / 2]), ms(blank[blank.len() * 95 / 100]));
    println!(
        "| `browser state load …` in a blank tab (storage through the stand-in page) | {p50:.1} ms | {p95:.1} ms |"
    );
}

/// Serves the workspace's files over HTTP/1.1 on 127.0.0.1 from threads of
/// its own (they end with the benchmark); its `http://127.0.0.1:PORT`.
fn serve(ws: &Path) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    let root = ws.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || answer(stream, &root));
        }
    });
    format!("http://{addr}")
}

/// Answers one connection's requests (kept alive) with the files they name.
fn answer(mut stream: TcpStream, root: &Path) {
    let Ok(reading) = stream.try_clone() else { return };
    let mut reader = BufReader::new(reading);
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
        }
        let path = request.split_whitespace().nth(1).unwrap_or("/");
        let name = path.trim_start_matches('/').split('?').next().unwrap_or_default();
        let (status, body) = match std::fs::read(root.join(name)) {
            Ok(body) if !name.is_empty() => ("200 OK", body),
            _ => ("404 Not Found", b"not found".to_vec()),
        };
        let head = format!("HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n", body.len());
        if stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(&body)).is_err() {
            return;
        }
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
    println!(
        "| page | page HTML | AX tree (CDP JSON) | `snapshot --full` | `snapshot` (default) | `snapshot -i` | `read` (Markdown) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, file) in [
        ("long article", "article.html"),
        ("the article in a site's page", "site.html"),
        ("form-heavy page", "form.html"),
        ("table, 500 rows", "table.html"),
    ] {
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
        let (_, markdown) = browser.read(None, None).await.expect("read");
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} |",
            kb(html as usize),
            kb(tree),
            kb(bytes[0]),
            kb(bytes[1]),
            kb(bytes[2]),
            kb(markdown.len() + 1)
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

/// A long article (headings, paragraphs, links, a nav bar and a footer),
/// the same in a news site's page (menus, sidebar, footer), a form-heavy
/// page (60 labelled fields of every kind) and a 500-row table.
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
    // The same article as a news site serves it: a menu of 120 links, a
    // sidebar of 40 related stories, a search form and a footer of 60 links.
    let links = |n: usize, what: &str| -> String {
        (0..n).map(|i| format!("<li><a href='/{what}/{i}'>{what} link number {i}</a></li>")).collect()
    };
    let main = &article[article.find("<main>").expect("main")..article.find("</main>").expect("end") + 7];
    let site = format!(
        "<title>A long read — The Town Paper</title><header><nav><ul>{}</ul></nav>\
         <form><input aria-label='Search' name='q'><button>Search</button></form></header>{main}\
         <aside><h2>Related</h2><ul>{}</ul></aside><footer><ul>{}</ul></footer>",
        links(120, "menu"),
        links(40, "related"),
        links(60, "footer")
    );
    write("site.html", site);
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
