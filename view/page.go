package view

// pageHTML is the page: inline style, the tokens as spans, and a script
// that fills the one tooltip from the inline data on hover.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
  body { font: 15px/1.5 system-ui, sans-serif; margin: 2em auto; max-width: 60em; padding: 0 1em; color: #222; background: #fafafa; }
  h1 { font-size: 1.2em; font-weight: 600; }
  .legend { font-size: 0.85em; color: #555; margin-bottom: 1em; display: flex; gap: 1.2em; align-items: center; flex-wrap: wrap; }
  .scale { display: inline-block; width: 10em; height: 0.8em; vertical-align: middle; border-radius: 3px;
    background: linear-gradient(to right, hsl(0,85%,80%), hsl(42,85%,80%), hsl(85,85%,80%), hsl(120,85%,80%)); }
  .text { font: 15px/2.1 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-word;
    background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 1em; }
  .plain { color: #777; }
  .tok { border-radius: 3px; padding: 1px 0; cursor: default; box-shadow: inset -1px 0 0 rgba(0,0,0,0.12); }
  .tok:hover, .tok.active { outline: 2px solid #333; }
  .tok.forced { text-decoration: underline dotted #555 2px; text-underline-offset: 4px; font-style: italic; }
  .tok.unscored { background: #eee; color: #888; }
  .cap { border: 2px solid #3b6fd8; border-radius: 5px; padding: 2px 1px; position: relative; margin: 0 2px; }
  .cap > .label { position: absolute; top: -1.35em; left: -2px; font: 11px/1.2 system-ui, sans-serif; background: #3b6fd8; color: #fff;
    padding: 1px 5px; border-radius: 4px 4px 0 0; white-space: nowrap; pointer-events: none; }
  #tip { position: absolute; display: none; background: #fff; border: 1px solid #999; border-radius: 6px; box-shadow: 0 4px 14px rgba(0,0,0,0.18);
    padding: 0.5em 0.7em; font-size: 13px; z-index: 10; min-width: 16em; pointer-events: none; }
  #tip h2 { font-size: 13px; margin: 0 0 0.3em; font-family: ui-monospace, monospace; }
  #tip table { border-collapse: collapse; width: 100%; }
  #tip td, #tip th { padding: 1px 6px; text-align: right; font-variant-numeric: tabular-nums; }
  #tip td:first-child, #tip th:first-child { text-align: left; font-family: ui-monospace, monospace; white-space: pre; }
  #tip tr.chosen { font-weight: 700; }
  #tip .muted { color: #777; }
  button { font: inherit; font-size: 0.85em; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<div class="legend">
  <span>probability <span class="scale"></span> 0 → 1</span>
  <span><span class="tok forced">forced</span>: the constraint left one choice</span>
  <span><span class="cap" style="padding:0 4px">capture</span>: outlined with its confidence</span>
  <button id="mode" type="button">shade by: model</button>
  <span class="muted">{{.Count}} tokens; hover one for its alternatives</span>
</div>
<div class="text" id="text">{{range .Groups}}{{if ge .Cap 0}}<span class="cap" data-cap="{{.Cap}}"><span class="label">{{.Label}}</span>{{end}}{{range .Pieces}}{{if ge .Tok 0}}<span class="{{.Class}}" data-i="{{.Tok}}" style="{{.Shade}}">{{.Text}}</span>{{else}}<span class="plain">{{.Plain}}</span>{{end}}{{end}}{{if ge .Cap 0}}</span>{{end}}{{end}}</div>
<div id="tip" role="tooltip"></div>
<script id="data" type="application/json">{{.Data}}</script>
<script>
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
  var toks = data.tokens, tip = document.getElementById("tip");
  function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; }); }
  function vis(s) { return s.replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(/^ | $/g, "\u2423"); }
  function pct(p) { if (p == null) return "–"; return p >= 0.995 ? (100 * p).toFixed(1) + "%" : p >= 0.01 ? (100 * p).toFixed(1) + "%" : (100 * p).toPrecision(2) + "%"; }
  function shade(p) { p = Math.max(0, Math.min(1, p)); return "hsl(" + Math.round(120 * Math.sqrt(p)) + ", 85%, 80%)"; }
  var byConstrained = false;
  document.getElementById("mode").addEventListener("click", function () {
    byConstrained = !byConstrained;
    this.textContent = "shade by: " + (byConstrained ? "constrained" : "model");
    document.querySelectorAll(".tok[data-i]").forEach(function (el) {
      var t = toks[+el.dataset.i];
      if (t.u) return;
      el.style.backgroundColor = shade(byConstrained && t.cp != null ? t.cp : t.p);
    });
  });
  function show(el) {
    var t = toks[+el.dataset.i], h = "<h2>" + esc(vis(t.t)) + "</h2>";
    if (t.u) {
      h += "<div class=muted>not scored</div>";
    } else {
      h += "<div>model p = <b>" + pct(t.p) + "</b> (logprob " + (t.lp === null ? "-∞" : t.lp.toFixed(3)) + ")</div>";
      if (t.cp != null) h += "<div>constrained p = <b>" + pct(t.cp) + "</b></div>";
      if (t.f) h += "<div><i>forced: the constraint allowed only this token</i></div>";
      if (t.c) h += "<div>in capture <b>" + esc(t.c) + "</b></div>";
    }
    var con = {};
    (t.ca || []).forEach(function (a) { con[a.id] = a.p; });
    if (t.a && t.a.length) {
      h += "<table><tr><th>alternative</th><th>model</th>" + (t.cp != null ? "<th>constrained</th>" : "") + "</tr>";
      t.a.forEach(function (a) {
        var chosen = a.t === t.t;
        h += "<tr class='alt" + (chosen ? " chosen" : "") + "'><td>" + esc(vis(a.t)) + "</td><td>" + pct(a.p) + "</td>" +
          (t.cp != null ? "<td>" + (a.id in con ? pct(con[a.id]) : "<span class=muted>masked</span>") + "</td>" : "") + "</tr>";
      });
      h += "</table>";
    } else if (!t.u) {
      h += "<div class=muted>no alternatives recorded (ask for top logprobs)</div>";
    }
    tip.innerHTML = h;
    tip.style.display = "block";
    var r = el.getBoundingClientRect(), w = tip.offsetWidth;
    var left = Math.min(window.scrollX + r.left, window.scrollX + document.documentElement.clientWidth - w - 8);
    tip.style.left = Math.max(4, left) + "px";
    tip.style.top = (window.scrollY + r.bottom + 6) + "px";
    el.classList.add("active");
  }
  var text = document.getElementById("text");
  text.addEventListener("mouseover", function (e) {
    var el = e.target.closest(".tok[data-i]");
    if (el) show(el);
  });
  text.addEventListener("mouseout", function (e) {
    var el = e.target.closest(".tok[data-i]");
    if (el) { el.classList.remove("active"); tip.style.display = "none"; }
  });
})();
</script>
</body>
</html>
`
