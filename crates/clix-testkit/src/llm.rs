//! The real small model of the end-to-end tests: Qwen2.5-Coder-1.5B-Instruct
//! (Q4_K_M GGUF) served by llama.cpp's server as built into the PyPI wheel
//! `xllamacpp==0.2.9` (prebuilt, CPU, nothing compiled; stock chat template,
//! greedy sampling). .ci/run installs the wheel and assembles the model into
//! ~/.cache/clix/models with scripts/llm/fetch-qwen-model.py.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The GGUF that scripts/llm/fetch-qwen-model.py assembles.
const MODEL_NAME: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";
const MODEL_SIZE: u64 = 1_117_320_768;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The model (`CLIX_TEST_LLM_MODEL`, else the cache), or why it cannot be used.
fn model_path() -> Result<PathBuf, String> {
    let path = match std::env::var_os("CLIX_TEST_LLM_MODEL") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/clix/models").join(MODEL_NAME),
    };
    match std::fs::metadata(&path) {
        Ok(m) if m.len() == MODEL_SIZE => Ok(path),
        Ok(m) => Err(format!(
            "{} has {} bytes, not {MODEL_SIZE}; fetch it again with `python3 scripts/llm/fetch-qwen-model.py`",
            path.display(),
            m.len()
        )),
        Err(_) => Err(format!(
            "the model {} is missing; fetch it with `python3 scripts/llm/fetch-qwen-model.py`",
            path.display()
        )),
    }
}

fn server_present() -> Result<(), String> {
    let ok = Command::new("python3").args(["-c", "import xllamacpp"]).output().is_ok_and(|o| o.status.success());
    if ok { Ok(()) } else { Err("python3 cannot import xllamacpp (`pip install xllamacpp==0.2.9`)".into()) }
}

/// The served model, started for `test`; `None` (after a visible skip, or
/// a failure under CI) when the model or the server is missing.
pub fn serve(test: &str) -> Option<LlamaServer> {
    match model_path().and_then(|m| server_present().map(|()| m)) {
        Ok(model) => Some(LlamaServer::start(&model)),
        Err(why) => {
            crate::skip_missing(test, &why);
            None
        }
    }
}

/// The server process, on a free port of 127.0.0.1; killed when dropped.
pub struct LlamaServer {
    child: Child,
    /// The OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`); the model is named `local`.
    pub url: String,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts the server and waits (up to 180 s) until the model is loaded.
    /// Panics with the server's log when it does not come up.
    pub fn start(model: &Path) -> LlamaServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port());
        let port = port.unwrap_or_else(|e| panic!("no free port: {e}"));
        let log = std::env::temp_dir().join(format!("clix-llm-{}-{port}.log", std::process::id()));
        let out = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let child = Command::new("python3")
            .arg(repo_root().join("scripts/llm/serve-xllamacpp.py"))
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--threads", "2", "--ctx", "8192"])
            // Greedy: the same prompt gets the same reply, run after run.
            .args(["--temp", "0"])
            // Cores are shared with the build and other tests.
            .env("OMP_WAIT_POLICY", "PASSIVE")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("python3 does not start the server: {e}"));
        let mut server = LlamaServer { child, url: format!("http://127.0.0.1:{port}/v1"), log };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(180) {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the model server exited ({status}) before it was ready:\n{}", server.log_tail());
            }
            if healthy(port) {
                eprintln!("model server ready in {:.1}s", started.elapsed().as_secs_f64());
                return server;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the model server was not ready within 180 s:\n{}", server.log_tail());
    }

    /// The last 30 lines of the server's log, for a failure message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `GET /health` answers 200 once the model is loaded (503 before).
fn healthy(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}
