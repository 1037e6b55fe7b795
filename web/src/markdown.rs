//! Markdown as a small tree of our own, so model output is never injected as HTML.
//!
//! `pulldown-cmark` parses the text; this module keeps only the structures a chat needs
//! (paragraphs, headings, lists, quotes, code, tables, emphasis, links) as plain data. Raw HTML
//! in the text becomes visible text, links keep only `http`, `https` and `mailto` targets, and
//! images are shown as links rather than loaded. The component layer then renders this tree
//! with ordinary view nodes, whose text is always escaped by the DOM.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A block of a rendered message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// A paragraph.
    Paragraph(Vec<Inline>),
    /// A heading of level 1 to 6.
    Heading(u8, Vec<Inline>),
    /// A code block with its language, if one was given after the fence.
    Code {
        /// The info string's first word (`rust`, `sh`, …).
        lang: Option<String>,
        /// The code exactly as written.
        text: String,
    },
    /// A block quote.
    Quote(Vec<Block>),
    /// A list; `start` is the first number of an ordered list.
    List {
        /// `Some(n)` for an ordered list starting at `n`.
        start: Option<u64>,
        /// The items, each a sequence of blocks.
        items: Vec<Vec<Block>>,
    },
    /// A thematic break.
    Rule,
    /// A table: the header cells and the rows of cells.
    Table {
        /// Header cells.
        head: Vec<Vec<Inline>>,
        /// Body rows.
        rows: Vec<Vec<Vec<Inline>>>,
    },
    /// Raw HTML from the text, shown as the literal text it is.
    Html(String),
}

/// Inline content of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inline {
    /// Plain text.
    Text(String),
    /// `code`.
    Code(String),
    /// *emphasis*.
    Emphasis(Vec<Inline>),
    /// **strong**.
    Strong(Vec<Inline>),
    /// ~~struck~~.
    Strike(Vec<Inline>),
    /// A link; `href` is `None` when the target's scheme is not allowed (then only the text
    /// is shown).
    Link {
        /// The target, when it is safe to follow.
        href: Option<String>,
        /// The link text.
        children: Vec<Inline>,
    },
    /// A hard line break.
    Break,
    /// A task list checkbox.
    Task(bool),
}

/// Parses Markdown into blocks.
pub fn parse(markdown: &str) -> Vec<Block> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut builder = Builder::default();
    for event in Parser::new_ext(markdown, options) {
        builder.event(event);
    }
    builder.finish()
}

/// Only these link schemes are followed; anything else (`javascript:`, `data:`, relative
/// paths into the app) is shown as text.
pub fn safe_href(url: &str) -> Option<String> {
    let lower = url.trim().to_ascii_lowercase();
    ["https://", "http://", "mailto:"]
        .iter()
        .any(|scheme| lower.starts_with(scheme))
        .then(|| url.trim().to_string())
}

/// A container of blocks being built.
#[derive(Debug)]
enum Container {
    Root,
    Quote,
    List(Option<u64>, Vec<Vec<Block>>),
    Item,
}

/// A container of inlines being built.
#[derive(Debug)]
enum InlineKind {
    Paragraph,
    /// Inline content directly inside a list item (a tight list has no paragraph events).
    Implicit,
    Heading(u8),
    Cell,
    Emphasis,
    Strong,
    Strike,
    Link(Option<String>),
    /// Anything this module does not render specially keeps its text.
    Plain,
}

#[derive(Debug, Default)]
struct TableBuild {
    head: Vec<Vec<Inline>>,
    rows: Vec<Vec<Vec<Inline>>>,
    row: Vec<Vec<Inline>>,
    in_head: bool,
}

#[derive(Debug)]
struct Builder {
    containers: Vec<(Container, Vec<Block>)>,
    inlines: Vec<(InlineKind, Vec<Inline>)>,
    code: Option<(Option<String>, String)>,
    html: Option<String>,
    tables: Vec<TableBuild>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            containers: vec![(Container::Root, Vec::new())],
            inlines: Vec::new(),
            code: None,
            html: None,
            tables: Vec::new(),
        }
    }
}

impl Builder {
    fn push_block(&mut self, block: Block) {
        self.close_implicit();
        if let Some((_, blocks)) = self.containers.last_mut() {
            blocks.push(block);
        }
    }

    fn push_inline(&mut self, inline: Inline) {
        if self.inlines.is_empty() {
            self.inlines.push((InlineKind::Implicit, Vec::new()));
        }
        if let Some((_, items)) = self.inlines.last_mut() {
            // Adjacent text pieces are merged so the tree stays small and easy to compare.
            if let (Inline::Text(new), Some(Inline::Text(last))) = (&inline, items.last_mut()) {
                last.push_str(new);
                return;
            }
            items.push(inline);
        }
    }

    /// Ends the implicit paragraph of a tight list item before a block starts in the item.
    fn close_implicit(&mut self) {
        if matches!(self.inlines.last(), Some((InlineKind::Implicit, _))) {
            let (_, items) = self.inlines.pop().expect("checked");
            if let Some((_, blocks)) = self.containers.last_mut() {
                blocks.push(Block::Paragraph(items));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                self.close_implicit();
                self.inlines.push((InlineKind::Paragraph, Vec::new()));
            }
            Tag::Heading { level, .. } => {
                self.close_implicit();
                self.inlines
                    .push((InlineKind::Heading(level as u8), Vec::new()));
            }
            Tag::BlockQuote(_) => {
                self.close_implicit();
                self.containers.push((Container::Quote, Vec::new()));
            }
            Tag::CodeBlock(kind) => {
                self.close_implicit();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .map(str::to_string)
                        .filter(|l| !l.is_empty()),
                    CodeBlockKind::Indented => None,
                };
                self.code = Some((lang, String::new()));
            }
            Tag::HtmlBlock => {
                self.close_implicit();
                self.html = Some(String::new());
            }
            Tag::List(start) => {
                self.close_implicit();
                self.containers
                    .push((Container::List(start, Vec::new()), Vec::new()));
            }
            Tag::Item => self.containers.push((Container::Item, Vec::new())),
            Tag::Table(_) => {
                self.close_implicit();
                self.tables.push(TableBuild::default());
            }
            Tag::TableHead => {
                if let Some(table) = self.tables.last_mut() {
                    table.in_head = true;
                }
            }
            Tag::TableRow => {}
            Tag::TableCell => self.inlines.push((InlineKind::Cell, Vec::new())),
            Tag::Emphasis => self.inlines.push((InlineKind::Emphasis, Vec::new())),
            Tag::Strong => self.inlines.push((InlineKind::Strong, Vec::new())),
            Tag::Strikethrough => self.inlines.push((InlineKind::Strike, Vec::new())),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.inlines
                    .push((InlineKind::Link(safe_href(&dest_url)), Vec::new()));
            }
            _ => self.inlines.push((InlineKind::Plain, Vec::new())),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::Heading(_) => {
                self.close_implicit_inside();
                if let Some((kind, items)) = self.inlines.pop() {
                    let block = match kind {
                        InlineKind::Heading(level) => Block::Heading(level, items),
                        _ => Block::Paragraph(items),
                    };
                    self.push_block(block);
                }
            }
            TagEnd::BlockQuote(_) => {
                self.close_implicit();
                if let Some((Container::Quote, blocks)) = self.containers.pop() {
                    self.push_block(Block::Quote(blocks));
                }
            }
            TagEnd::CodeBlock => {
                if let Some((lang, text)) = self.code.take() {
                    self.push_block(Block::Code { lang, text });
                }
            }
            TagEnd::HtmlBlock => {
                if let Some(html) = self.html.take() {
                    self.push_block(Block::Html(html));
                }
            }
            TagEnd::Item => {
                self.close_implicit();
                if let Some((Container::Item, blocks)) = self.containers.pop() {
                    if let Some((Container::List(_, items), _)) = self.containers.last_mut() {
                        items.push(blocks);
                    }
                }
            }
            TagEnd::List(_) => {
                self.close_implicit();
                if let Some((Container::List(start, items), _)) = self.containers.pop() {
                    self.push_block(Block::List { start, items });
                }
            }
            TagEnd::TableCell => {
                if let Some((_, items)) = self.inlines.pop() {
                    if let Some(table) = self.tables.last_mut() {
                        table.row.push(items);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = self.tables.last_mut() {
                    table.head = std::mem::take(&mut table.row);
                    table.in_head = false;
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = self.tables.last_mut() {
                    let row = std::mem::take(&mut table.row);
                    if table.in_head {
                        table.head = row;
                    } else {
                        table.rows.push(row);
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.tables.pop() {
                    self.push_block(Block::Table {
                        head: table.head,
                        rows: table.rows,
                    });
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image => {
                if let Some((kind, children)) = self.inlines.pop() {
                    let inline = match kind {
                        InlineKind::Emphasis => Inline::Emphasis(children),
                        InlineKind::Strong => Inline::Strong(children),
                        InlineKind::Strike => Inline::Strike(children),
                        InlineKind::Link(href) => Inline::Link { href, children },
                        _ => Inline::Emphasis(children),
                    };
                    self.push_inline(inline);
                }
            }
            _ => {
                // A construct rendered as plain content: keep its children inline.
                if let Some((InlineKind::Plain, children)) = self.inlines.pop() {
                    for child in children {
                        self.push_inline(child);
                    }
                }
            }
        }
    }

    /// An implicit paragraph can only be open at the top of the inline stack; a paragraph
    /// ending under it means the implicit one was never needed.
    fn close_implicit_inside(&mut self) {
        if self.inlines.len() >= 2 && matches!(self.inlines.last(), Some((InlineKind::Implicit, _)))
        {
            let (_, items) = self.inlines.pop().expect("checked");
            for item in items {
                self.push_inline(item);
            }
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
        } else if let Some(html) = &mut self.html {
            html.push_str(text);
        } else {
            self.push_inline(Inline::Text(text.to_string()));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => self.push_inline(Inline::Code(code.to_string())),
            Event::Html(html) => {
                if let Some(block) = &mut self.html {
                    block.push_str(&html);
                } else {
                    self.push_block(Block::Html(html.to_string()));
                }
            }
            Event::InlineHtml(html) => self.push_inline(Inline::Text(html.to_string())),
            Event::SoftBreak => self.push_inline(Inline::Text(" ".to_string())),
            Event::HardBreak => self.push_inline(Inline::Break),
            Event::Rule => self.push_block(Block::Rule),
            Event::TaskListMarker(done) => self.push_inline(Inline::Task(done)),
            Event::FootnoteReference(name) => self.push_inline(Inline::Text(format!("[^{name}]"))),
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                self.push_inline(Inline::Code(math.to_string()))
            }
        }
    }

    fn finish(mut self) -> Vec<Block> {
        self.close_implicit();
        // Unclosed inline containers cannot happen with pulldown-cmark's balanced events, but
        // if they did, their text must not be lost.
        while let Some((_, items)) = self.inlines.pop() {
            if let Some((_, blocks)) = self.containers.last_mut() {
                blocks.push(Block::Paragraph(items));
            }
        }
        while self.containers.len() > 1 {
            let (_, blocks) = self.containers.pop().expect("checked");
            if let Some((_, parent)) = self.containers.last_mut() {
                parent.extend(blocks);
            }
        }
        self.containers.pop().map(|(_, b)| b).unwrap_or_default()
    }
}

/// Every code block's text, in order (for tests and for the copy buttons' labels).
pub fn code_blocks(blocks: &[Block]) -> Vec<&str> {
    let mut found = Vec::new();
    for block in blocks {
        match block {
            Block::Code { text, .. } => found.push(text.as_str()),
            Block::Quote(inner) => found.extend(code_blocks(inner)),
            Block::List { items, .. } => {
                for item in items {
                    found.extend(code_blocks(item));
                }
            }
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &str) -> Inline {
        Inline::Text(t.to_string())
    }

    #[test]
    fn paragraphs_emphasis_and_code() {
        assert_eq!(
            parse("Hello *you* and **me**, `x = 1`."),
            vec![Block::Paragraph(vec![
                text("Hello "),
                Inline::Emphasis(vec![text("you")]),
                text(" and "),
                Inline::Strong(vec![text("me")]),
                text(", "),
                Inline::Code("x = 1".into()),
                text("."),
            ])]
        );
    }

    #[test]
    fn fenced_code_keeps_its_text_and_language() {
        let blocks = parse("Run this:\n\n```sh\necho '<b>hi</b>'\n```\n");
        assert_eq!(
            blocks[1],
            Block::Code {
                lang: Some("sh".into()),
                text: "echo '<b>hi</b>'\n".into()
            }
        );
        assert_eq!(code_blocks(&blocks), vec!["echo '<b>hi</b>'\n"]);
    }

    #[test]
    fn raw_html_stays_text() {
        let blocks = parse("<script>alert(1)</script>\n\nand <img src=x onerror=alert(1)> inline");
        assert_eq!(blocks[0], Block::Html("<script>alert(1)</script>\n".into()));
        assert_eq!(
            blocks[1],
            Block::Paragraph(vec![text("and <img src=x onerror=alert(1)> inline")])
        );
    }

    #[test]
    fn only_safe_links_are_followed() {
        let blocks =
            parse("[ok](https://example.org) [bad](javascript:alert(1)) ![img](http://x/y.png)");
        let Block::Paragraph(inlines) = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(
            inlines[0],
            Inline::Link {
                href: Some("https://example.org".into()),
                children: vec![text("ok")]
            }
        );
        assert_eq!(
            inlines[2],
            Inline::Link {
                href: None,
                children: vec![text("bad")]
            }
        );
        assert!(matches!(&inlines[4], Inline::Link { href: Some(h), .. } if h == "http://x/y.png"));
    }

    #[test]
    fn tight_and_loose_lists() {
        assert_eq!(
            parse("- one\n- two *x*\n"),
            vec![Block::List {
                start: None,
                items: vec![
                    vec![Block::Paragraph(vec![text("one")])],
                    vec![Block::Paragraph(vec![
                        text("two "),
                        Inline::Emphasis(vec![text("x")])
                    ])],
                ]
            }]
        );
        let loose = parse("3. a\n\n4. b\n");
        assert!(matches!(&loose[0], Block::List { start: Some(3), items } if items.len() == 2));
    }

    #[test]
    fn nested_lists_and_code_in_items() {
        let blocks = parse("- outer\n  - inner\n- with code\n\n  ```\n  x\n  ```\n");
        let Block::List { items, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(items.len(), 2);
        assert!(matches!(&items[0][1], Block::List { .. }), "{:?}", items[0]);
        assert_eq!(code_blocks(&blocks), vec!["x\n"]);
    }

    #[test]
    fn headings_quotes_rules_and_tasks() {
        let blocks = parse("# Title\n\n> quoted\n\n---\n\n- [x] done\n- [ ] todo\n");
        assert_eq!(blocks[0], Block::Heading(1, vec![text("Title")]));
        assert_eq!(
            blocks[1],
            Block::Quote(vec![Block::Paragraph(vec![text("quoted")])])
        );
        assert_eq!(blocks[2], Block::Rule);
        let Block::List { items, .. } = &blocks[3] else {
            panic!("{blocks:?}")
        };
        assert_eq!(
            items[0],
            vec![Block::Paragraph(vec![Inline::Task(true), text("done")])]
        );
    }

    #[test]
    fn tables_have_a_head_and_rows() {
        let blocks = parse("| a | b |\n|---|---|\n| 1 | **2** |\n");
        assert_eq!(
            blocks,
            vec![Block::Table {
                head: vec![vec![text("a")], vec![text("b")]],
                rows: vec![vec![vec![text("1")], vec![Inline::Strong(vec![text("2")])]]],
            }]
        );
    }

    #[test]
    fn line_breaks() {
        assert_eq!(
            parse("a\nb  \nc"),
            vec![Block::Paragraph(vec![
                text("a b"),
                Inline::Break,
                text("c")
            ])]
        );
    }

    #[test]
    fn banners_and_plain_text_survive() {
        assert_eq!(
            parse("--- not a rule: text ---"),
            vec![Block::Paragraph(vec![text("--- not a rule: text ---")])]
        );
        assert!(parse("").is_empty());
    }
}
