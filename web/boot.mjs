// The loading screen's driver: Trunk's initializer module (`data-initializer` in index.html).
// Trunk calls these hooks while it downloads and starts the app's wasm; the screen itself is
// plain HTML in index.html, so it is visible before this module or anything else arrives.
// Once the app has mounted, the screen goes away and the app's header shows the tokenizer
// table's download.

export default function initializer() {
  const screen = document.getElementById('boot');
  const text = document.getElementById('boot-text');
  const bar = document.getElementById('boot-progress');
  return {
    // Bytes as the page receives them, decompressed, against the wasm file's size; a share,
    // not megabytes, since the amount on the wire (compressed) is a third of either.
    onProgress({ current, total }) {
      if (!text || !bar || !(total > 0)) return;
      const percent = Math.min(100, Math.floor((current * 100) / total));
      bar.value = percent;
      text.textContent = current >= total ? 'Starting the app…' : `Loading the app… ${percent}%`;
    },
    onSuccess() {
      screen?.remove();
    },
    onFailure(reason) {
      // The app did not start, so the screen stays and says why, in place of a blank page.
      console.error('CCM could not start:', reason);
      if (!screen || !text) return;
      screen.classList.add('failed');
      bar?.remove();
      const why = reason instanceof Error ? reason.message : String(reason);
      text.textContent = `CCM could not start (${why}). Reload the page to try again; if it keeps failing, the browser may not support WebAssembly.`;
    },
  };
}
