// Drive a running JupyterLab in headless Chromium through what a new user meets (issue #16):
// live diagnostics while typing a %%tilekernel cell, a launch error in the rich panel, the SASS
// tab, a %tile_diff view, `explore` at an ordinary width, the unchecked-blocks badge. Prints
// one JSON object (the observations) as the last line of stdout; ../extension/
// test_browser_experience.py starts the server, writes the notebook and checks them.
//
// usage: node experience.mjs '{"url": ..., "token": ..., "notebook": ..., "artifacts": ...,
//                              "chromium": "/usr/bin/chromium", "liveCell": 6, ...}'
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { chromium } from "playwright-core";

const cfg = JSON.parse(process.argv[2]);
const TIMEOUT = cfg.timeoutMs ?? 90000;
const out = { consoleErrors: [], steps: [] };
const step = (name) => out.steps.push(name);
const shot = (name) => join(cfg.artifacts, name);

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

const reports = (page) => page.locator(".jp-OutputArea .cutile-lab-report");
const reportOfKind = (page, kind) =>
  page.locator(`.jp-OutputArea .cutile-lab-report[data-kind="${kind}"]`);

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
  // An ordinary layout: the file browser open beside the notebook.
  await page.evaluate(() =>
    window.jupyterapp.commands.execute("filebrowser:activate"),
  );
  step("kernel idle");

  await page.evaluate(() =>
    window.jupyterapp.commands.execute("notebook:run-all-cells"),
  );
  // compile, diff, unchecked stand-in, launch error: four reports
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll(".jp-OutputArea .cutile-lab-report").length >=
      n,
    cfg.reports,
  );
  await reportOfKind(page, "launch").first().waitFor({ state: "attached" });
  await page.waitForTimeout(500);
  step("reports rendered");

  // --- the SASS tab of a compiled kernel ---
  const compiled = reports(page)
    .filter({ has: page.locator('.cutile-lab-tab[data-tab="sass"]') })
    .first();
  await compiled.scrollIntoViewIfNeeded();
  await compiled.locator('.cutile-lab-tab[data-tab="sass"]').click();
  const sass = compiled.locator(".cutile-lab-sass");
  out.sass = {
    visible: await sass.isVisible(),
    lines: (await sass.innerText()).split("\n").length,
    hasExit: (await sass.innerText()).includes("EXIT"),
    box: await sass.boundingBox(),
  };
  await compiled.screenshot({ path: shot("sass-tab.png") });
  step("sass tab");

  // --- the %tile_diff view ---
  const diff = reportOfKind(page, "diff").first();
  await diff.scrollIntoViewIfNeeded();
  out.diff = {
    tabs: await diff
      .locator(".cutile-lab-tab")
      .evaluateAll((ts) => ts.map((t) => t.dataset.tab)),
    selected: await diff.evaluate((r) => r.dataset.selectedTab),
    oldLines: await diff.locator(".cutile-lab-diff-old").count(),
    newLines: await diff.locator(".cutile-lab-diff-new").count(),
    oldBackground: await diff
      .locator(".cutile-lab-diff-old")
      .first()
      .evaluate((n) => getComputedStyle(n).backgroundColor),
  };
  await diff.screenshot({ path: shot("tile-diff.png") });
  await diff.locator('.cutile-lab-tab[data-tab="sassdiff"]').click();
  out.diff.sassRows = await diff
    .locator('.cutile-lab-panel[data-tab="sassdiff"] .cutile-lab-diff-row')
    .count();
  await diff.locator('.cutile-lab-tab[data-tab="compare"]').click();
  out.diff.changedResources = await diff
    .locator(".cutile-lab-diff-changed")
    .evaluateAll((rs) => rs.map((r) => r.dataset.key));
  step("diff");

  // --- the unchecked-blocks badge ---
  const badge = page.locator(".jp-OutputArea .cutile-lab-unchecked").first();
  out.unchecked = {
    text: await badge.innerText(),
    color: await badge.evaluate((n) => getComputedStyle(n).color),
  };
  await badge
    .locator("xpath=ancestor::div[contains(@class,'cutile-lab-report')]")
    .locator(".cutile-lab-header")
    .screenshot({ path: shot("unchecked-badge.png") });
  step("unchecked badge");

  // --- explore at 1400 px with the file browser open ---
  const img = page.locator(".jp-OutputArea .widget-output img").first();
  await img.waitFor({ state: "attached" });
  await img.scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  out.explore = await page.evaluate(() => {
    const img = document.querySelector(".jp-OutputArea .widget-output img");
    const box = (n) => {
      const r = n.getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height };
    };
    const outputs = [
      ...document.querySelectorAll(".jp-OutputArea .widget-output"),
    ];
    const table = outputs.find((o) => o.querySelector("table"));
    const area = img.closest(".jp-OutputArea-output");
    return {
      plot: box(img),
      table: table ? box(table) : null,
      tableScrolls: table
        ? getComputedStyle(table).overflowX === "auto" ||
          table.scrollWidth <= table.clientWidth + 1
        : null,
      area: box(area),
      rows: table ? table.querySelectorAll("tbody tr").length : 0,
      leftPanelOpen: !document
        .querySelector("#jp-left-stack")
        ?.classList.contains("lm-mod-hidden"),
      window: { width: window.innerWidth, height: window.innerHeight },
    };
  });
  await page
    .locator(".jp-OutputArea .widget-vbox")
    .first()
    .screenshot({ path: shot("explore-1400px.png") });
  step("explore");

  // --- a launch error in the rich panel, located at the cell ---
  const launch = reportOfKind(page, "launch").first();
  await launch.scrollIntoViewIfNeeded();
  const diag = launch.locator(".cutile-lab-diagnostic").first();
  out.launch = {
    head: await diag.locator(".cutile-lab-diag-head").innerText(),
    location: await diag.locator(".cutile-lab-location").innerText(),
    lineText: await diag.evaluate((d) => {
      const row = d.querySelector(
        `.cutile-lab-src[data-src-line="${d.dataset.line}"]`,
      );
      return row ? row.lastChild.textContent : null;
    }),
    cellIndex: await launch.evaluate((r) => {
      const cells = [...document.querySelectorAll(".jp-Notebook .jp-Cell")];
      return cells.findIndex((c) => c.contains(r));
    }),
  };
  await diag.locator(".cutile-lab-message").click();
  await page.waitForFunction(() => window.cutileLabLastReveal !== undefined);
  out.launch.reveal = await page.evaluate(() => window.cutileLabLastReveal);
  await launch.screenshot({ path: shot("launch-error.png") });
  step("launch error");

  // --- live diagnostics: type a store into a shared input, without running the cell ---
  await page.evaluate((i) => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    nb.activeCellIndex = i;
    nb.mode = "edit";
  }, cfg.liveCell);
  const cell = page.locator(".jp-Notebook .jp-Cell").nth(cfg.liveCell);
  await cell.scrollIntoViewIfNeeded();
  await cell.locator(".cm-content").click();
  await page.keyboard.press("Control+End");
  await page.keyboard.press("Enter");
  await page.keyboard.type(cfg.liveTyped, { delay: 20 });
  const underline = cell.locator(
    `.cutile-lab-live[data-code="${cfg.liveCode}"]`,
  );
  await underline.first().waitFor({ state: "visible" });
  out.live = {
    underlined: await underline.first().innerText(),
    decoration: await underline
      .first()
      .evaluate((n) => getComputedStyle(n).textDecorationLine),
    counters: await page.evaluate(() => window.cutileLabLive),
    executionCount: await page.evaluate(
      (i) =>
        window.jupyterapp.shell.currentWidget.content.widgets[i].model
          .executionCount,
      cfg.liveCell,
    ),
    outputs: await cell.locator(".jp-OutputArea-output").count(),
  };
  await underline.first().hover();
  const tip = page.locator(".cutile-lab-live-tooltip");
  await tip.waitFor({ state: "visible" });
  out.live.tooltip = await tip.innerText();
  await page.waitForTimeout(200);
  await cell.screenshot({ path: shot("live-diagnostics.png") });
  step("live diagnostics");
} catch (err) {
  out.error = String(err && err.stack ? err.stack : err);
  try {
    // what each cell shows, to tell why a wait did not end
    out.cellsAtFailure = await context.pages()[0].evaluate(() =>
      [...document.querySelectorAll(".jp-Notebook .jp-Cell")].map((c) => ({
        prompt: c.querySelector(".jp-InputPrompt")?.textContent,
        output: (c.querySelector(".jp-OutputArea")?.textContent ?? "").slice(
          0,
          300,
        ),
        reports: c.querySelectorAll(".cutile-lab-report").length,
      })),
    );
  } catch {
    // ignore
  }
  try {
    await context
      .pages()[0]
      .screenshot({ path: shot("experience-failure.png") });
  } catch {
    // ignore
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

console.log(JSON.stringify(out));
