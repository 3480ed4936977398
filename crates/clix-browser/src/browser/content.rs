//! The page as something to keep or read: as Markdown (`read`), as a PDF,
//! what changed since the last snapshot (`diff`), and files put on a file
//! input (`upload`).

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Browser, Change, text_of};
use crate::error::{BrowserError, Result};

/// The Markdown of `this` (an element, or the document's body), made in
/// the page: headings, paragraphs, lists, links, code, quotes and tables;
/// navigation, sidebars, footers, scripts, styles, form controls and hidden
/// elements left out (unless the element asked for is one).
const READER: &str = r#"function() {
  const SKIP = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','NAV','SVG','CANVAS','IFRAME','OBJECT','EMBED',
    'HEAD','BUTTON','SELECT','INPUT','TEXTAREA','DIALOG','MENU']);
  const INLINE = new Set(['A','SPAN','STRONG','B','EM','I','CODE','SMALL','SUB','SUP','MARK','ABBR','TIME','LABEL',
    'IMG','BR','S','U','Q','CITE','KBD','VAR','DFN','BDI','BDO','DATA','WBR','FONT','DEL','INS','SAMP','OUTPUT']);
  // Around the text, not of it: menus, sidebars, footers (unless asked for one).
  const AROUND = new Set(['ASIDE', 'FOOTER']);
  const ROLES = new Set(['navigation', 'complementary', 'contentinfo', 'search']);
  const root = this.nodeType === 9 ? this.body : this;
  const hidden = el => el !== root && (el.hidden || el.getAttribute('aria-hidden') === 'true'
    || AROUND.has(el.tagName) || ROLES.has(el.getAttribute('role'))
    || (el.checkVisibility ? !el.checkVisibility() : false));
  // A link on the page's own origin as its path: the address is known, and shorter.
  const short = a => a.origin === location.origin && a.origin !== 'null'
    ? a.pathname + a.search + a.hash : a.href;
  const clean = s => s.split('\n').map(l => l.replace(/\s+/g, ' ').trim()).filter(Boolean).join('\n');
  const kids = node => [...node.childNodes].filter(c => c.nodeType === 3
    || (c.nodeType === 1 && !SKIP.has(c.tagName) && !hidden(c)));
  const inline = node => kids(node).map(c => c.nodeType === 3 ? c.data.replace(/\s+/g, ' ') : inl(c)).join('');
  const inl = el => {
    const t = el.tagName;
    if (t === 'BR') return '\n';
    if (t === 'IMG') return el.alt ? `![${el.alt}]` : '';
    if (t === 'CODE') return el.textContent ? '`' + el.textContent + '`' : '';
    const x = inline(el).trim();
    if (!x) return '';
    if (t === 'A') return el.href && !/^javascript:/i.test(el.href) ? `[${x}](${short(el)})` : x;
    if (t === 'STRONG' || t === 'B') return `**${x}**`;
    if (t === 'EM' || t === 'I') return `*${x}*`;
    return inline(el);
  };
  const list = (el, level) => {
    const lines = [];
    let n = 1;
    for (const li of el.children) {
      if (li.tagName !== 'LI' || hidden(li)) continue;
      const marker = el.tagName === 'OL' ? `${n++}.` : '-';
      let text = '';
      const nested = [];
      for (const c of kids(li)) {
        if (c.nodeType === 1 && (c.tagName === 'UL' || c.tagName === 'OL')) nested.push(list(c, level + 1));
        else text += c.nodeType === 3 ? c.data : (INLINE.has(c.tagName) ? inl(c) : ' ' + render(c) + ' ');
      }
      lines.push('  '.repeat(level) + marker + ' ' + clean(text).replace(/\n+/g, ' '), ...nested);
    }
    return lines.join('\n');
  };
  const table = el => {
    const rows = [...el.rows].filter(r => !hidden(r))
      .map(r => [...r.cells].map(c => clean(inline(c)).replace(/\n/g, ' ').replace(/\|/g, '\\|')));
    if (!rows.length) return '';
    const w = Math.max(...rows.map(r => r.length));
    const row = r => '| ' + [...r, ...Array(w - r.length).fill('')].join(' | ') + ' |';
    return [row(rows[0]), '|' + ' --- |'.repeat(w), ...rows.slice(1).map(row)].join('\n');
  };
  const render = node => {
    const out = [];
    let line = '';
    const flush = () => { const t = clean(line); if (t) out.push(t); line = ''; };
    const block = s => { flush(); if (s) out.push(s); };
    const walk = n => {
      for (const c of kids(n)) {
        if (c.nodeType === 3) { line += c.data.replace(/\s+/g, ' '); continue; }
        const t = c.tagName;
        if (/^H[1-6]$/.test(t)) { const x = clean(inline(c)).replace(/\n/g, ' '); block(x && '#'.repeat(+t[1]) + ' ' + x); }
        else if (t === 'P') { flush(); line = inline(c); flush(); }
        else if (t === 'UL' || t === 'OL') block(list(c, 0));
        else if (t === 'PRE') block('```\n' + c.innerText.replace(/\n+$/, '') + '\n```');
        else if (t === 'BLOCKQUOTE') block(render(c).split('\n').map(l => l ? '> ' + l : '>').join('\n'));
        else if (t === 'TABLE') block(table(c));
        else if (t === 'HR') block('---');
        else if (INLINE.has(t)) line += inl(c);
        else { flush(); walk(c); flush(); }
      }
    };
    walk(node);
    flush();
    return out.join('\n\n');
  };
  // The root itself as the one child of a stand-in, so an element asked for keeps its own form.
  return render({childNodes: [root]});
}"#;

impl Browser {
    /// `browser read [@eN | -s SELECTOR]`: the page (or one element, by ref
    /// or by CSS selector) as Markdown, and the page's address.
    pub async fn read(&self, reference: Option<&str>, selector: Option<&str>) -> Result<(String, String)> {
        let element = match (reference, selector) {
            (Some(_), Some(_)) => {
                return Err(BrowserError::Usage("read takes @eN or -s SELECTOR, not both".into()));
            }
            (Some(r), None) => Some(self.element(r).await?),
            (None, Some(s)) => Some(self.query(s).await?),
            (None, None) => None,
        };
        let markdown = match element {
            Some(backend) => self.on_element(backend, READER, &[]).await?,
            None => self.eval(&format!("({READER}).call(document)")).await?,
        };
        let (url, _) = self.url_and_title().await?;
        Ok((url, text_of(markdown)))
    }

    /// `browser pdf`: the page printed to a PDF (backgrounds kept).
    pub async fn pdf(&self) -> Result<Vec<u8>> {
        let printed = self.on_page("Page.printToPDF", json!({"printBackground": true})).await?;
        let data = printed.get("data").and_then(Value::as_str).unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| BrowserError::Protocol(format!("the PDF was not base64: {e}")))
    }

    /// `browser diff`: the lines added and removed since the tab's last
    /// snapshot (or action), which this one then replaces. With nothing to
    /// compare with (no snapshot of this page yet), the start of the page,
    /// as after a navigation.
    pub async fn diff(&mut self) -> Result<Change> {
        self.observe(false).await
    }

    /// `browser upload @eN FILE…`: puts the files (paths Chromium can read:
    /// in the workspace, which its sandbox mounts at the same path) on a
    /// file input, as choosing them in the dialog would.
    pub async fn upload(&mut self, reference: &str, files: &[PathBuf], limit: Duration) -> Result<Change> {
        let backend = self.element(reference).await?;
        let multiple = self
            .on_element(
                backend,
                "function() { return this.tagName === 'INPUT' && this.type === 'file' ? this.multiple : null; }",
                &[],
            )
            .await?;
        let Some(multiple) = multiple.as_bool() else {
            return Err(BrowserError::Element(format!(
                "{reference} is not a file input; upload works on one (a button \"Choose File\" in browser snapshot -i)"
            )));
        };
        if files.len() > 1 && !multiple {
            return Err(BrowserError::Element(format!(
                "{reference} takes one file, and {} were given; upload them one at a time",
                files.len()
            )));
        }
        let (events, before) = (self.cdp.subscribe(), self.document().await?);
        let paths: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        // In the session of the input's frame, by the node id that session
        // knows (a cross-site frame is a target of its own); an answer lost
        // to a navigation the change caused is the action's effect.
        match self.on_node(backend, "DOM.setFileInputFiles", json!({"files": paths})).await {
            Err(e) if e.lost_to_navigation() => {}
            answer => {
                answer?;
            }
        }
        self.settle(events, before, limit).await
    }
}
