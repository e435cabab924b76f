"""The HTML report's stylesheet (inline in the page: the report is one self-contained file)."""

CSS = """
:root{--ink:#1c2430;--muted:#5b6776;--line:#e3e8ee;--bg:#f3f5f8;--card:#fff;
--pass:#00785a;--pass-bg:#e3f4ee;--fail:#b34700;--fail-bg:#fdebdf;--warn:#8a5a00;
--warn-bg:#fff5dc;--info:#3b5b85;--info-bg:#e8eef7;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue","DejaVu Sans",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 24px 40px}
code{font-family:var(--mono);font-size:12.5px;background:#f0f3f7;padding:1px 5px;
border-radius:4px;overflow-wrap:anywhere}
h2{font-size:17px;margin:0 0 12px}h4{font-size:13.5px;margin:20px 0 8px;color:var(--ink)}
section,header.top{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:18px 22px;margin:0 0 16px}
header.top{border-left:6px solid var(--info);display:grid;grid-template-columns:1fr auto;
gap:4px 24px;align-items:center}
header.top.pass{border-left-color:var(--pass)}header.top.fail,header.top.error,
header.top.invalid{border-left-color:var(--fail)}header.top.interrupted{border-left-color:#c68a00}
.brand{font-weight:800;font-size:22px;letter-spacing:-.01em}
.brand span{font-weight:500;font-size:15px;color:var(--muted);margin-left:10px}
.verdict{grid-row:span 2;text-align:right}
.verdict-label{display:block;font-size:11px;text-transform:uppercase;letter-spacing:.1em;
color:var(--muted)}
.verdict-value{display:block;font-size:28px;font-weight:800;line-height:1.1}
.pass .verdict-value{color:var(--pass)}.fail .verdict-value,.error .verdict-value,
.invalid .verdict-value{color:var(--fail)}.interrupted .verdict-value{color:var(--warn)}
.tally{display:block;color:var(--muted);font-size:12.5px}
.meta{margin:0;color:var(--muted);font-size:12.5px}
.banner{background:var(--warn-bg);border:1px solid #f0d48a;color:#5c3d00;border-radius:8px;
padding:10px 14px;margin:0 0 16px}
.lede{color:var(--muted);margin:-6px 0 12px;font-size:13px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-size:12px;color:var(--muted);font-weight:600;border-bottom:1.5px solid #cfd6df;
white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;font-family:var(--mono);
font-size:12.5px;white-space:nowrap}
table.results td:first-child{max-width:300px;overflow-wrap:anywhere}
tr.differs th,tr.differs td{background:var(--warn-bg)}thead th.n{font-family:inherit;font-size:12px}
table.tokens{width:auto;min-width:60%}
.strong{font-weight:700}.muted{color:var(--muted)}.where{color:var(--muted);font-size:11.5px}
table.results a{color:var(--ink);font-weight:600;text-decoration:none;border-bottom:1px dotted}
table.settings th[scope=row]{color:var(--muted);font-weight:500;width:220px}
.badge{display:inline-block;padding:1px 10px;border-radius:999px;font-size:12px;font-weight:700;
white-space:nowrap;background:var(--info-bg);color:var(--info)}
.badge.pass{background:var(--pass-bg);color:var(--pass)}
.badge.fail,.badge.error,.badge.invalid{background:var(--fail-bg);color:var(--fail)}
.badge.incomplete,.badge.interrupted{background:var(--warn-bg);color:var(--warn)}
ul.reruns li.pass{color:var(--pass)}ul.reruns li.fail{color:var(--warn)}
.diag{border:1px solid var(--line);border-left:4px solid var(--info);border-radius:8px;
padding:10px 14px;margin:8px 0}
.diag.cond-exact{border-left-color:var(--pass)}.diag.cond-2,.diag.cond-1-2{
border-left-color:var(--fail)}.diag.cond-1{border-left-color:#c68a00}
.diag p{margin:6px 0 2px;font-weight:600}.diag p.next{font-weight:400}
.diag h4{margin:8px 0 0;font-size:12px;color:var(--muted)}.diag ul{margin:4px 0 0;padding-left:20px;
color:var(--muted)}
.diag-head{display:flex;gap:12px;align-items:center}.cond{font-size:11.5px;font-weight:700;
text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.two{display:grid;grid-template-columns:1fr 1fr;gap:28px}.two p{margin:0 0 6px}
.hash code{font-size:11.5px}
dl.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:12px 20px;
margin:0}
dl.grid dt{font-size:12px;color:var(--muted)}dl.grid dd{margin:0;font-weight:600;
overflow-wrap:anywhere}
h2 code.srv{font-size:13px;font-weight:500;margin-left:6px;vertical-align:2px}
dl.cfg{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0;font-size:13px}
dl.cfg dt{color:var(--muted)}dl.cfg dd{margin:0;font-family:var(--mono);font-size:12.5px}
ul.problems{list-style:none;margin:0;padding:0}
ul.problems li{padding:7px 10px;border-radius:6px;margin:4px 0;overflow-wrap:anywhere}
ul.problems li.err{background:var(--fail-bg)}ul.problems li.warn{background:var(--warn-bg)}
.kind{font-weight:700;text-transform:uppercase;font-size:11px;letter-spacing:.06em;
margin-right:8px}
.helper-head{display:flex;gap:12px;align-items:center;margin-bottom:10px}
.helper-head h2{margin:0;font-family:var(--mono);font-size:18px}
.note{margin:6px 0;padding:8px 12px;border-radius:6px;font-size:13px}
.note.err{background:var(--fail-bg);color:#7a2f00}.note.warn{background:var(--warn-bg);
color:#5c3d00}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:10px;
margin:12px 0 4px}
.stat{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fbfcfd}
.stat .label{font-size:12px;color:var(--muted);font-weight:600}
.stat .value{font-family:var(--mono);font-size:15px;font-weight:600;margin-top:2px}
.stat .big{font-size:21px}.stat .sub{color:var(--muted);font-size:12px;margin-top:2px}
figure.heat{margin:0}
.heat-plot{display:grid;grid-template-columns:44px 1fr;grid-template-rows:auto 22px}
.yaxis{position:relative;font:11px var(--mono);color:var(--muted)}
.yaxis span{position:absolute;right:8px;transform:translateY(-50%)}
.xaxis{grid-column:2;position:relative;font:11px var(--mono);color:var(--muted)}
.xaxis span{position:absolute;top:3px;transform:translateX(-50%)}
.xaxis span::before{content:"";position:absolute;left:50%;top:-4px;height:4px;
border-left:1px solid #9aa5b1}
.heat-frame{border:1px solid #cfd6df;background:#fff;line-height:0}
img.heatmap{display:block;width:100%;image-rendering:pixelated}
figcaption{color:var(--muted);font-size:12.5px;margin:6px 0 0 44px}
.legend{margin:12px 0 0 44px;display:flex;flex-wrap:wrap;gap:10px 18px;
align-items:flex-start}
.scale-title{font:600 12px var(--mono);line-height:14px;margin-top:12px}
.scale{position:relative;display:flex;height:44px;padding-top:12px}
.sw{display:block;width:34px;height:14px}
.scale i{position:absolute;top:30px;transform:translateX(-50%);font:10.5px var(--mono);
font-style:normal;color:var(--muted);white-space:nowrap}
.scale i::before{content:"";position:absolute;left:50%;top:-5px;height:4px;
border-left:1px solid #8a96a3}
.scale .tau{position:absolute;top:-2px;transform:translateX(-50%);font:700 11px var(--mono);
color:var(--ink)}
.scale .tau::after{content:"";position:absolute;left:50%;top:13px;height:15px;
border-left:2px solid var(--ink)}
.keys{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:12px;color:var(--muted);
margin-top:12px}
.key{display:inline-flex;align-items:center;gap:5px}
.chip{display:inline-block;width:14px;height:14px;border:1px solid #c3cbd5}
details.samples{margin-top:14px}details.samples summary{cursor:pointer;font-weight:600;
color:var(--muted);font-size:13px;margin-bottom:6px}
tr.skip td{color:var(--muted);font-style:italic}tr.tail td:first-child{
box-shadow:inset 3px 0 0 var(--fail)}
footer{color:var(--muted);font-size:12px;margin-top:24px;line-height:1.6}
@media print{body{background:#fff}section,header.top{break-inside:avoid-page}
details.samples{display:block}}
"""
