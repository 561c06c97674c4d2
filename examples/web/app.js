// Classifies the test images of samples.js with each exported model: through WebGPU (webgpu/)
// where the browser has it, else through WebAssembly (wasm/); ?backend=wasm asks for the latter.
// Each result is also logged as "tg-web <model> <backend> <labels>" (tests/web_page.py reads
// the console), then "tg-web done" or "tg-web error <message>".
import { samples } from "./samples.js";

const status = document.getElementById("status");

async function gpuDevice() {
  if (new URLSearchParams(location.search).get("backend") === "wasm" || !navigator.gpu) return null;
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return null;
  const names = ["maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup",
                 "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize", "maxBufferSize"];
  return adapter.requestDevice({ requiredLimits: Object.fromEntries(names.map((n) => [n, adapter.limits[n]])) });
}

function show(name, backend, pixels, probs, labels) {
  const section = document.createElement("div");
  section.className = "model";
  const right = labels.filter((l, i) => l === samples.labels[i]).length;
  section.innerHTML = `<h2>${name.toUpperCase()} (${backend}): ${right} of ${samples.count} right</h2>`;
  const grid = document.createElement("div");
  grid.className = "grid";
  for (let i = 0; i < samples.count; ++i) {
    const card = document.createElement("div");
    card.className = labels[i] === samples.labels[i] ? "card" : "card wrong";
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 28;
    const image = canvas.getContext("2d").createImageData(28, 28);
    for (let p = 0; p < 784; ++p) {
      image.data.fill(pixels[i * 784 + p], 4 * p, 4 * p + 3);
      image.data[4 * p + 3] = 255;
    }
    canvas.getContext("2d").putImageData(image, 0, 0);
    card.append(canvas);
    card.insertAdjacentHTML("beforeend", `<div class="label">${samples.classes[labels[i]]}</div>` +
                            `<div class="truth">true: ${samples.classes[samples.labels[i]]}</div>`);
    const bars = document.createElement("div");
    bars.className = "bars";
    for (let k = 0; k < 10; ++k) {
      const p = probs[i * 10 + k];
      bars.insertAdjacentHTML("beforeend", `<div class="bar"><span>${samples.classes[k]}</span>` +
                              `<div style="width:${Math.round(80 * p)}px"></div></div>`);
    }
    card.append(bars);
    grid.append(card);
  }
  section.append(grid);
  document.getElementById("models").append(section);
}

try {
  const pixels = Uint8Array.from(atob(samples.pixels), (c) => c.charCodeAt(0));
  const device = await gpuDevice();
  const backend = device ? "webgpu" : "wasm";
  status.textContent = device ? "running on WebGPU" : "no WebGPU here: running on WebAssembly";
  for (const name of ["mlp", "cnn"]) {
    const { create } = await import(`./${backend}/${name}.js`);
    const model = device ? await create(device) : await create();
    const t0 = performance.now();
    const { probs } = await model.classify({ pixels });
    const ms = performance.now() - t0;
    model.destroy();
    const labels = Array.from({ length: samples.count }, (_, i) => {
      const row = probs.subarray(10 * i, 10 * i + 10);
      return row.indexOf(Math.max(...row));
    });
    show(name, backend, pixels, probs, labels);
    console.log(`tg-web ${name} ${backend} ${labels.join(",")} ${ms.toFixed(1)}ms`);
  }
  status.textContent += ": done";
  console.log("tg-web done");
} catch (e) {
  status.textContent = `error: ${e.message}`;
  console.log(`tg-web error ${e.message}`);
}
