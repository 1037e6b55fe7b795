//! Markdown rendered with our own view nodes: text is always escaped by the DOM, never parsed
//! as HTML. Code blocks get a copy button.

use crate::js::timeout;
use crate::markdown::{self, Block, Inline};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen_futures::JsFuture;

/// A message's text rendered as Markdown.
#[component]
pub fn RichText(
    /// The Markdown source (model output or the person's message).
    #[prop(into)]
    text: String,
) -> impl IntoView {
    let blocks = markdown::parse(&text);
    view! { <div class="rich">{blocks.into_iter().map(block_view).collect_view()}</div> }
}

fn blocks_view(blocks: Vec<Block>) -> Vec<AnyView> {
    blocks.into_iter().map(block_view).collect()
}

fn block_view(block: Block) -> AnyView {
    match block {
        Block::Paragraph(inlines) => view! { <p>{inlines_view(inlines)}</p> }.into_any(),
        // Headings inside a message sit below the app's own (h1, h2) in the outline.
        Block::Heading(1, inlines) => view! { <h3 class="heading h1">{inlines_view(inlines)}</h3> }.into_any(),
        Block::Heading(2, inlines) => view! { <h4 class="heading h2">{inlines_view(inlines)}</h4> }.into_any(),
        Block::Heading(3, inlines) => view! { <h5 class="heading h3">{inlines_view(inlines)}</h5> }.into_any(),
        Block::Heading(_, inlines) => view! { <h6 class="heading">{inlines_view(inlines)}</h6> }.into_any(),
        Block::Code { lang, text } => view! { <CodeBlock lang=lang text=text /> }.into_any(),
        Block::Quote(blocks) => view! { <blockquote>{blocks_view(blocks)}</blockquote> }.into_any(),
        Block::List {
            start: Some(start),
            items,
        } => view! {
            <ol start=start.to_string()>
                {items.into_iter().map(|item| view! { <li>{blocks_view(item)}</li> }).collect_view()}
            </ol>
        }
        .into_any(),
        Block::List { start: None, items } => view! {
            <ul>
                {items.into_iter().map(|item| view! { <li>{blocks_view(item)}</li> }).collect_view()}
            </ul>
        }
        .into_any(),
        Block::Rule => view! { <hr /> }.into_any(),
        Block::Table { head, rows } => view! {
            <div class="table-wrap">
                <table>
                    <thead>
                        <tr>
                            {head.into_iter().map(|cell| view! { <th>{inlines_view(cell)}</th> }).collect_view()}
                        </tr>
                    </thead>
                    <tbody>
                        {rows
                            .into_iter()
                            .map(|row| {
                                view! {
                                    <tr>
                                        {row.into_iter().map(|cell| view! { <td>{inlines_view(cell)}</td> }).collect_view()}
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        }
        .into_any(),
        Block::Html(text) => view! { <pre class="raw-html">{text}</pre> }.into_any(),
    }
}

fn inlines_view(inlines: Vec<Inline>) -> Vec<AnyView> {
    inlines.into_iter().map(inline_view).collect()
}

fn inline_view(inline: Inline) -> AnyView {
    match inline {
        Inline::Text(text) => text.into_any(),
        Inline::Code(code) => view! { <code>{code}</code> }.into_any(),
        Inline::Emphasis(children) => view! { <em>{inlines_view(children)}</em> }.into_any(),
        Inline::Strong(children) => view! { <strong>{inlines_view(children)}</strong> }.into_any(),
        Inline::Strike(children) => view! { <del>{inlines_view(children)}</del> }.into_any(),
        Inline::Link {
            href: Some(href),
            children,
        } => view! {
            <a href=href target="_blank" rel="noopener noreferrer nofollow">
                {inlines_view(children)}
            </a>
        }
        .into_any(),
        Inline::Link {
            href: None,
            children,
        } => view! { <span class="inert-link">{inlines_view(children)}</span> }.into_any(),
        Inline::Break => view! { <br /> }.into_any(),
        Inline::Task(done) => view! {
            <input
                type="checkbox"
                disabled=true
                checked=done
                aria-label=if done { "done" } else { "not done" }
            />
        }
        .into_any(),
    }
}

/// Copies text to the clipboard; `false` when the browser refused.
pub async fn copy_to_clipboard(text: &str) -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let promise = window.navigator().clipboard().write_text(text);
    JsFuture::from(promise).await.is_ok()
}

/// A code block with its language and a copy button.
#[component]
pub fn CodeBlock(
    /// The language after the fence, if any.
    lang: Option<String>,
    /// The code.
    text: String,
) -> impl IntoView {
    let copied = RwSignal::new(None::<bool>);
    let to_copy = text.clone();
    let copy = move |_| {
        let text = to_copy.clone();
        spawn_local(async move {
            let ok = copy_to_clipboard(&text).await;
            let _ = copied.try_set(Some(ok));
            timeout(1_500.0).await;
            // The block may be gone by now (a new turn re-rendered the chat).
            let _ = copied.try_set(None);
        });
    };
    view! {
        <div class="code-block" data-testid="code-block">
            <div class="code-head">
                <span class="code-lang">{lang.unwrap_or_else(|| "code".to_string())}</span>
                <button
                    type="button"
                    class="copy"
                    data-testid="copy-code"
                    aria-label="Copy this code block"
                    on:click=copy
                >
                    {move || match copied.get() {
                        Some(true) => "Copied",
                        Some(false) => "Copy failed",
                        None => "Copy",
                    }}
                </button>
            </div>
            <pre>
                <code>{text}</code>
            </pre>
        </div>
    }
}
