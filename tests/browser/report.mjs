// Drive a running JupyterLab in headless Chromium: open a notebook, run it, and record what
// the cutile_lab report renderer did. Prints one JSON object (the observations) as the last
// line of stdout; ../test_extension_browser.py starts the server and checks them.
//
// usage: node report.mjs '{"url": ..., "token": ..., "notebook": ..., "reports": 1,
//                          "artifacts": ..., "chromium": "/usr/bin/chromium"}'
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const TIMEOUT = cfg.timeoutMs ?? 120000;
const out = { consoleErrors: [], steps: [] };
const step = (name) => out.steps.push(name);

mkdirSync(cfg.artifacts, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "cutile-lab-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: cfg.chromium ?? "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 1000 },
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});

try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  page.on("console", (msg) => {
    if (msg.type() === "error") out.consoleErrors.push(msg.text());
  });
  page.on("pageerror", (err) => out.consoleErrors.push(String(err)));

  // A workspace of its own (the server is shared by every browser test of the session), so
  // that no other test's open documents come back.
  const workspace = cfg.notebook.replace(/\W/g, "-");
  await page.goto(
    `${cfg.url}/lab/workspaces/${workspace}/tree/${cfg.notebook}?reset&token=${cfg.token}`,
  );
  step("opened");
  await page.waitForFunction(
    (path) =>
      window.jupyterapp?.shell?.currentWidget?.context?.path === path &&
      window.jupyterapp.shell.currentWidget.content?.widgets?.length > 0,
    cfg.notebook,
  );
  await page.evaluate(async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.context.ready;
    await panel.sessionContext.ready;
  });
  await page.waitForFunction(
    () =>
      window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel
        ?.status === "idle",
  );
  step("kernel idle");

  await page.evaluate(() =>
    window.jupyterapp.commands.execute("notebook:run-all-cells"),
  );
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll(".jp-OutputArea .cutile-lab-report").length >=
      n,
    cfg.reports ?? 1,
  );
  step("reports rendered");
  out.reports = await page.locator(".jp-OutputArea .cutile-lab-report").count();
  // Let lazy layout settle (fonts, windowed notebook).
  await page.waitForTimeout(500);

  // --- the report with diagnostics: tabs, rendering, click → cell cursor ---
  const withDiag = page
    .locator(".jp-OutputArea .cutile-lab-report")
    .filter({ has: page.locator('.cutile-lab-tab[data-tab="diagnostics"]') })
    .first();
  out.hasDiagnosticsReport = (await withDiag.count()) > 0;
  if (out.hasDiagnosticsReport) {
    out.tabs = await withDiag
      .locator(".cutile-lab-tab")
      .evaluateAll((ts) => ts.map((t) => t.dataset.tab));
    out.selectedTab = await withDiag.evaluate((r) => r.dataset.selectedTab);
    const diag = withDiag.locator(".cutile-lab-diagnostic").first();
    out.diagnosticHead = await diag
      .locator(".cutile-lab-diag-head")
      .innerText();
    out.diagnosticSeverityColor = await diag
      .locator(".cutile-lab-sev")
      .evaluate((n) => getComputedStyle(n).color);
    out.diagnosticLinkHref = await diag
      .locator("a.cutile-lab-code")
      .evaluateAll((as) => as.map((a) => a.getAttribute("href"))[0] ?? null);
    // The source text of the primary line, as the report shows it.
    out.expectedLineText = await diag.evaluate((d) => {
      const row = d.querySelector(
        `.cutile-lab-src[data-src-line="${d.dataset.line}"]`,
      );
      return row ? row.lastChild.textContent : null;
    });

    await diag.locator(".cutile-lab-message").click();
    await page.waitForFunction(() => window.cutileLabLastReveal !== undefined);
    await page.waitForTimeout(300);
    out.reveal = await page.evaluate(() => window.cutileLabLastReveal);
    out.cursor = await readCursor(page);
    step("clicked diagnostic");
    await page.screenshot({ path: join(cfg.artifacts, "report.png") });
  }

  // --- the report with Tile IR: highlighting, hover links, click → cell cursor ---
  const withIR = page
    .locator(".jp-OutputArea .cutile-lab-report")
    .filter({ has: page.locator('.cutile-lab-tab[data-tab="tileir"]') })
    .first();
  out.hasTileIRReport = (await withIR.count()) > 0;
  if (out.hasTileIRReport) {
    await withIR.locator('.cutile-lab-tab[data-tab="tileir"]').click();
    const panel = withIR.locator('.cutile-lab-panel[data-tab="tileir"]');
    out.tokenCounts = await panel.evaluate((p) => {
      const counts = {};
      for (const n of p.querySelectorAll('[class^="cutile-tir-"]')) {
        counts[n.className] = (counts[n.className] ?? 0) + 1;
      }
      return counts;
    });
    // Token colours come from the theme: an op must not look like plain text.
    out.opColor = await panel
      .locator(".cutile-tir-op")
      .first()
      .evaluate((n) => getComputedStyle(n).color);
    out.plainColor = await panel
      .locator(".cutile-lab-ir-pane .cutile-lab-row-text")
      .first()
      .evaluate((n) => getComputedStyle(n).color);

    // Hover a mapped Tile IR line: its source line lights up.
    const mapped = panel.locator(
      ".cutile-lab-ir-pane .cutile-lab-row.cutile-lab-mapped",
    );
    out.mappedIRLines = await mapped.count();
    // Prefer the first load: it maps to another line than the diagnostic clicked above.
    const loads = mapped.filter({
      has: page.locator(".cutile-tir-op", { hasText: /^load/ }),
    });
    const target = (await loads.count())
      ? loads.first()
      : mapped.filter({ has: page.locator(".cutile-tir-op") }).last();
    out.hoveredIRLine = await target.getAttribute("data-ir-line");
    await target.hover();
    out.linkedFromIR = await panel
      .locator(".cutile-lab-source-pane .cutile-lab-linked")
      .evaluateAll((ns) => ns.map((n) => Number(n.dataset.srcLine)));
    out.linkedBackground = await panel
      .locator(".cutile-lab-source-pane .cutile-lab-linked")
      .first()
      .evaluate((n) => getComputedStyle(n).backgroundColor)
      .catch(() => null);
    // And the other way round.
    const srcLine = out.linkedFromIR[0];
    if (srcLine !== undefined) {
      await panel
        .locator(
          `.cutile-lab-source-pane .cutile-lab-row[data-src-line="${srcLine}"]`,
        )
        .hover();
      out.linkedFromSource = await panel
        .locator(".cutile-lab-ir-pane .cutile-lab-linked")
        .evaluateAll((ns) => ns.map((n) => Number(n.dataset.irLine)));
    }
    await target.hover();
    await withIR.screenshot({ path: join(cfg.artifacts, "report-tileir.png") });

    // Click the Tile IR line: the cell cursor goes to its source line.
    out.irExpectedLineText = await panel
      .locator(
        `.cutile-lab-source-pane .cutile-lab-row[data-src-line="${srcLine}"] .cutile-lab-row-text`,
      )
      .innerText()
      .catch(() => null);
    await page.evaluate(() => {
      window.cutileLabLastReveal = undefined;
    });
    await target.click();
    await page.waitForFunction(() => window.cutileLabLastReveal !== undefined);
    await page.waitForTimeout(300);
    out.irReveal = await page.evaluate(() => window.cutileLabLastReveal);
    out.irCursor = await readCursor(page);
    step("clicked Tile IR line");

    // Dark theme: the same report, re-coloured by the theme's variables.
    out.lightBackground = await withIR.evaluate(
      (n) =>
        getComputedStyle(n.querySelector(".cutile-lab-code-block"))
          .backgroundColor,
    );
    await page.evaluate(() =>
      window.jupyterapp.commands.execute("apputils:change-theme", {
        theme: "JupyterLab Dark",
      }),
    );
    await page.waitForFunction(
      () => document.body.dataset.jpThemeLight === "false",
    );
    await page.waitForTimeout(1000);
    out.darkBackground = await withIR.evaluate(
      (n) =>
        getComputedStyle(n.querySelector(".cutile-lab-code-block"))
          .backgroundColor,
    );
    await withIR.screenshot({
      path: join(cfg.artifacts, "report-tileir-dark.png"),
    });
    step("dark theme");
  }

  // --- the other tabs, for the eye ---
  const first = page.locator(".jp-OutputArea .cutile-lab-report").first();
  for (const tab of await first
    .locator(".cutile-lab-tab")
    .evaluateAll((ts) => ts.map((t) => t.dataset.tab))) {
    await first.locator(`.cutile-lab-tab[data-tab="${tab}"]`).click();
    await first.screenshot({
      path: join(cfg.artifacts, `tab-${tab}-dark.png`),
    });
  }
  await page.evaluate(() =>
    window.jupyterapp.commands.execute("apputils:change-theme", {
      theme: "JupyterLab Light",
    }),
  );
  await page.waitForFunction(
    () => document.body.dataset.jpThemeLight === "true",
  );

  // --- the Tile IR editor language: a .tileir file opens highlighted ---
  out.tileirLanguage = await page.evaluate(() => ({
    fileTypes: window.jupyterapp.docRegistry
      .getFileTypesForPath("x.tileir")
      .map((f) => f.name),
  }));
  if (cfg.tileirFile) {
    await page.evaluate(
      (path) => window.jupyterapp.commands.execute("docmanager:open", { path }),
      cfg.tileirFile,
    );
    await page.waitForFunction(
      () =>
        document.querySelectorAll(".jp-FileEditor .cm-line span[class]")
          .length > 50,
    );
    await page.waitForTimeout(500);
    out.tileirEditor = await page.evaluate(() => {
      const widget = window.jupyterapp.shell.currentWidget;
      const spans = [...widget.node.querySelectorAll(".cm-line span[class]")];
      return {
        mimeType: widget.content.model.mimeType,
        styledTokens: spans.length,
        styledTexts: [...new Set(spans.map((s) => s.textContent))].slice(
          0,
          200,
        ),
      };
    });
    await page.screenshot({ path: join(cfg.artifacts, "tileir-editor.png") });
    step("tileir editor");
  }
} catch (err) {
  out.error = String(err && err.stack ? err.stack : err);
  try {
    const page = context.pages()[0];
    await page.screenshot({ path: join(cfg.artifacts, "failure.png") });
  } catch {
    // ignore
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

console.log(JSON.stringify(out));

/** Read the active cell's cursor and highlighted line back through the page. */
async function readCursor(page) {
  return page.evaluate(() => {
    const notebook = window.jupyterapp.shell.currentWidget.content;
    const cell = notebook.activeCell;
    const highlighted = [
      ...cell.node.querySelectorAll(".cm-line.cutile-lab-reveal-line"),
    ].map((n) => n.textContent);
    const focused =
      cell.node
        .querySelector(".cm-content")
        ?.contains(document.activeElement) ?? false;
    return {
      cellIndex: notebook.activeCellIndex,
      mode: notebook.mode,
      position: cell.editor.getCursorPosition(),
      lineText: cell.editor.getLine(cell.editor.getCursorPosition().line),
      highlighted,
      focused,
    };
  });
}
