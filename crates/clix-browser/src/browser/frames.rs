//! Frames: a snapshot reads every frame of the tab and shows each under its
//! `<iframe>` (`- iframe "Title" (URL)`, its lines indented), and refs reach
//! into them. A frame in the tab's own renderer (same site) is read with
//! its frame id on the tab's session, and its DOM nodes work there as the
//! page's do. A cross-site frame is a target of its own (an out-of-process
//! frame, attached flat by `Target.setAutoAttach`): it is read on its own
//! session, and since DOM node ids are per process, its nodes get ids of
//! their own here (negative, never a real node id) that stand for that
//! session and node. Its coordinates are its own viewport's: a click adds
//! where its `<iframe>` sits in the frame around it.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::watch::OopFrame;
use super::{Browser, RefTarget};
use crate::error::{BrowserError, Result};
use crate::snapshot::{Document, Rendered, SnapshotOptions, render_documents};

/// Longest chain of frames followed up to the page (a guard, not a limit met).
const NESTING: usize = 16;

/// The ids given to nodes of out-of-process frames.
#[derive(Debug, Default)]
pub(crate) struct FrameNodes {
    ids: HashMap<(String, i64), i64>,
    nodes: HashMap<i64, (String, i64)>,
}

impl FrameNodes {
    /// The id standing for node `backend` of `session`, the same each time.
    fn id(&mut self, session: &str, backend: i64) -> i64 {
        let next = -1 - self.nodes.len() as i64;
        let id = *self.ids.entry((session.to_string(), backend)).or_insert(next);
        self.nodes.entry(id).or_insert_with(|| (session.to_string(), backend));
        id
    }
}

/// A frame as `browser frame` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FrameInfo {
    /// 1 is the page; frames follow in the order they were found.
    pub number: usize,
    /// The number of the frame it is in (`None` for the page).
    pub parent: Option<usize>,
    /// Its address.
    pub url: String,
    /// Its `<iframe>`'s name (title), else its document's title.
    pub title: String,
    /// It runs in a process of its own (a cross-site frame).
    pub separate: bool,
}

/// One frame's document as read for a snapshot.
struct Frame {
    session: String,
    url: String,
    title: String,
    separate: bool,
    nodes: Vec<Value>,
    /// The frame it is in (index) and its `<iframe>` element there.
    owner: Option<(usize, i64)>,
}

/// The frames one session shows: the tab's, or an out-of-process frame's
/// (`oop`) with the frames in its process.
struct Process {
    session: String,
    tree: Value,
    oop: Option<OopFrame>,
}

/// `(frame id, url, parent frame id)` of each frame of a frame tree, parents first.
fn frames_of(tree: &Value) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(node) = stack.pop() {
        let field = |k: &str| node.pointer(&format!("/frame/{k}")).and_then(Value::as_str).map(String::from);
        out.push((field("id").unwrap_or_default(), field("url").unwrap_or_default(), field("parentId")));
        if let Some(children) = node.get("childFrames").and_then(Value::as_array) {
            stack.extend(children.iter().rev().cloned());
        }
    }
    out
}

impl Browser {
    /// The current tab's tree with its frames', fetched once and rendered
    /// once per view (options, and the page's DOM node to start from).
    pub(crate) async fn rendered(&mut self, views: &[(SnapshotOptions, Option<i64>)]) -> Result<Vec<Rendered>> {
        let (document, frames) = self.read_frames().await?;
        let (target, tab) = {
            let t = self.tab()?;
            (t.target.clone(), t.session.clone())
        };
        let documents: Vec<Document> =
            frames.iter().map(|f| Document { nodes: &f.nodes, owner: f.owner, label: label(f) }).collect();
        let (refs, by_node, next, ids) = (&mut self.refs, &mut self.by_node, &mut self.next_ref, &mut self.frame_nodes);
        let mut ref_for = |index: usize, backend: i64| {
            let session = &frames[index].session;
            let backend = if *session == tab { backend } else { ids.id(session, backend) };
            by_node
                .entry((target.clone(), document.clone(), backend))
                .or_insert_with(|| {
                    let name = format!("e{next}");
                    *next += 1;
                    refs.insert(
                        name.clone(),
                        RefTarget { target: target.clone(), document: document.clone(), backend },
                    );
                    name
                })
                .clone()
        };
        Ok(views.iter().map(|&(options, root)| render_documents(&documents, options, root, &mut ref_for)).collect())
    }

    /// `browser frame`: the page and its frames.
    pub async fn frames(&mut self) -> Result<Vec<FrameInfo>> {
        let (_, frames) = self.read_frames().await?;
        Ok(frames
            .iter()
            .enumerate()
            .map(|(i, f)| FrameInfo {
                number: i + 1,
                parent: f.owner.map(|(p, _)| p + 1),
                url: f.url.clone(),
                title: f.title.clone(),
                separate: f.separate,
            })
            .collect())
    }

    /// The tab's document (its loader id) and every frame's tree, the page first.
    async fn read_frames(&self) -> Result<(String, Vec<Frame>)> {
        let tab = self.tab()?.session.clone();
        // The tree first, the document after: a navigation that begins right
        // after the tree was read has sent its events by the time the
        // document is answered, so the action sees it and reads again.
        let page = nodes(self.call(Some(&tab), "Accessibility.getFullAXTree", json!({})).await?);
        let tree = self.call(Some(&tab), "Page.getFrameTree", json!({})).await?;
        let document =
            tree.pointer("/frameTree/frame/loaderId").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut frames = vec![Frame {
            session: tab.clone(),
            url: tree.pointer("/frameTree/frame/url").and_then(Value::as_str).unwrap_or_default().into(),
            title: title_of(&page),
            separate: false,
            nodes: page,
            owner: None,
        }];
        // (frame, the session holding its <iframe>, that element)
        let mut owners: Vec<(usize, String, Option<i64>)> = Vec::new();
        let local = tree.get("frameTree").cloned().unwrap_or(Value::Null);
        let mut sessions = vec![Process { session: tab.clone(), tree: local, oop: None }];
        let oop: Vec<(String, OopFrame)> = {
            let logs = self.watch.lock();
            logs.oop_frames
                .iter()
                .filter(|(s, _)| logs.frames.get(*s) == Some(&tab))
                .map(|(s, f)| (s.clone(), f.clone()))
                .collect()
        };
        for (session, frame) in oop {
            // A frame gone since it attached is simply not shown.
            if let Ok(tree) = self.call(Some(&session), "Page.getFrameTree", json!({})).await {
                let tree = tree.get("frameTree").cloned().unwrap_or(Value::Null);
                sessions.push(Process { session, tree, oop: Some(frame) });
            }
        }
        for Process { session, tree, oop } in &sessions {
            for (i, (frame, url, parent)) in frames_of(tree).into_iter().enumerate() {
                let root = i == 0;
                if root && oop.is_none() {
                    continue; // the page, read above
                }
                let params = if root { json!({}) } else { json!({"frameId": frame}) };
                let Ok(read) = self.call(Some(session), "Accessibility.getFullAXTree", params).await else { continue };
                // Its <iframe> is in the frame around it: in this session, or for
                // an out-of-process frame's root, in the session it came from.
                let (owner_session, owner_frame) = match (root, oop, parent) {
                    (true, Some(frame), _) => (frame.parent.clone(), frame.frame.clone()),
                    _ => (session.clone(), frame.clone()),
                };
                let owner = self
                    .call(Some(&owner_session), "DOM.getFrameOwner", json!({"frameId": owner_frame}))
                    .await
                    .ok()
                    .and_then(|o| o.get("backendNodeId").and_then(Value::as_i64));
                let nodes = nodes(read);
                let title = title_of(&nodes);
                let separate = oop.is_some();
                frames.push(Frame { session: session.clone(), url, title, separate, nodes, owner: None });
                owners.push((frames.len() - 1, owner_session, owner));
            }
        }
        // Each frame under the frame holding its <iframe>, which gives it its
        // name (title attribute) when it has one; one whose <iframe> is not
        // in any tree (hidden from it) is not shown.
        for (index, session, element) in owners {
            let Some(element) = element else { continue };
            let Some(at) = frames.iter().position(|f| f.session == session && has_node(&f.nodes, element)) else {
                continue;
            };
            frames[index].owner = Some((at, element));
            if let Some(name) = name_of(&frames[at].nodes, element).filter(|n| !n.is_empty()) {
                frames[index].title = name;
            }
        }
        Ok((document, frames))
    }

    /// The session a DOM node's calls go to, and its node id there.
    fn node_home(&self, backend: i64) -> Result<(String, i64)> {
        if backend >= 0 {
            return Ok((self.tab()?.session.clone(), backend));
        }
        self.frame_nodes.nodes.get(&backend).cloned().ok_or_else(|| {
            BrowserError::Ref("that element's frame is gone; take a new snapshot: browser snapshot -i".into())
        })
    }

    /// A call about DOM node `backend` (given as `backendNodeId`), in its frame's session.
    pub(crate) async fn on_node(&self, backend: i64, method: &str, mut params: Value) -> Result<Value> {
        let (session, node) = self.node_home(backend)?;
        params["backendNodeId"] = json!(node);
        self.call(Some(&session), method, params).await
    }

    /// A call in the session of DOM node `backend`'s frame.
    pub(crate) async fn in_frame_of(&self, backend: i64, method: &str, params: Value) -> Result<Value> {
        let (session, _) = self.node_home(backend)?;
        self.call(Some(&session), method, params).await
    }

    /// Where the viewport of node `backend`'s frame starts on the page: 0
    /// for the page's own nodes; for an out-of-process frame, the content
    /// box of its `<iframe>`, scrolled into view, added up to the page.
    pub(crate) async fn frame_offset(&self, backend: i64) -> Result<(f64, f64)> {
        let tab = self.tab()?.session.clone();
        let (mut session, _) = self.node_home(backend)?;
        // Each <iframe> on the way up: the session it is in, and its node there.
        let mut owners = Vec::new();
        for _ in 0..NESTING {
            if session == tab {
                break;
            }
            let Some(frame) = self.watch.lock().oop_frames.get(&session).cloned() else { break };
            let owner = self.call(Some(&frame.parent), "DOM.getFrameOwner", json!({"frameId": frame.frame})).await?;
            let element = owner.get("backendNodeId").cloned().unwrap_or(Value::Null);
            let _ =
                self.call(Some(&frame.parent), "DOM.scrollIntoViewIfNeeded", json!({"backendNodeId": element})).await;
            owners.push((frame.parent.clone(), element));
            session = frame.parent;
        }
        if owners.is_empty() {
            return Ok((0.0, 0.0));
        }
        // The browser routes a click to a frame by where the page last drew
        // it, and a frame's scroll reaches the page around it only in a later
        // frame: wait until the page has drawn twice (at most 100 ms).
        let drawn = "new Promise(r => { requestAnimationFrame(() => requestAnimationFrame(r)); setTimeout(r, 100); })";
        let _ = self.call(Some(&tab), "Runtime.evaluate", json!({"expression": drawn, "awaitPromise": true})).await;
        let mut offset = (0.0, 0.0);
        for (session, element) in owners {
            let model = self.call(Some(&session), "DOM.getBoxModel", json!({"backendNodeId": element})).await?;
            let corner =
                |i: usize| model.pointer(&format!("/model/content/{i}")).and_then(Value::as_f64).unwrap_or(0.0);
            offset = (offset.0 + corner(0), offset.1 + corner(1));
        }
        Ok(offset)
    }
}

fn nodes(mut tree: Value) -> Vec<Value> {
    match tree.get_mut("nodes").map(Value::take) {
        Some(Value::Array(nodes)) => nodes,
        _ => Vec::new(),
    }
}

/// The document's title: its root's name.
fn title_of(nodes: &[Value]) -> String {
    nodes.first().and_then(|n| n.pointer("/name/value")).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn has_node(nodes: &[Value], backend: i64) -> bool {
    nodes.iter().any(|n| n.get("backendDOMNodeId").and_then(Value::as_i64) == Some(backend))
}

fn name_of(nodes: &[Value], backend: i64) -> Option<String> {
    let node = nodes.iter().find(|n| n.get("backendDOMNodeId").and_then(Value::as_i64) == Some(backend))?;
    Some(node.pointer("/name/value").and_then(Value::as_str).unwrap_or_default().trim().to_string())
}

/// The line in place of a frame's `<iframe>`.
fn label(frame: &Frame) -> String {
    let title: String = frame.title.split_whitespace().collect::<Vec<_>>().join(" ");
    let title: String = title.chars().take(80).collect();
    format!("iframe {title:?} ({})", frame.url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_trees_list_parents_first() {
        let tree = json!({"frame": {"id": "A", "url": "http://a/"}, "childFrames": [
            {"frame": {"id": "B", "url": "http://a/b", "parentId": "A"},
             "childFrames": [{"frame": {"id": "C", "url": "http://a/c", "parentId": "B"}}]},
            {"frame": {"id": "D", "url": "http://a/d", "parentId": "A"}}]});
        let ids: Vec<String> = frames_of(&tree).into_iter().map(|(id, _, _)| id).collect();
        assert_eq!(ids, ["A", "B", "C", "D"]);
    }

    #[test]
    fn out_of_process_nodes_get_lasting_ids_of_their_own() {
        let mut ids = FrameNodes::default();
        let a = ids.id("S1", 7);
        let b = ids.id("S2", 7);
        assert!(a < 0 && b < 0 && a != b);
        assert_eq!(ids.id("S1", 7), a);
        assert_eq!(ids.nodes[&b], ("S2".to_string(), 7));
    }
}
