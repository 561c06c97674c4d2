// Trains the Fashion-MNIST MLP with the training step tg exported (train/webgpu/mlp_train.js, or
// train/wasm/ where the browser has no WebGPU; ?backend=wasm asks for the latter) on the
// training images of train_data.bin, drawing the loss of every step and the accuracy on the
// held-out test images as it goes; then classifies test images with the module's `classify`
// method, which reads the same weights. ?steps=N: how many steps (default 600).
// The console gets "tg-web accuracy <step> <fraction>" as it goes, then "tg-web labels <the
// predicted label of every test image>" and "tg-web done <backend> <steps> <ms per step>", or
// "tg-web error <message>" (tests/web_train.py reads them).
const CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"];
const params = new URLSearchParams(location.search);
const STEPS = Number(params.get("steps") ?? 600);
const status = document.getElementById("status");

// A file beside the page (fetch() refuses file: URLs; XMLHttpRequest reads them).
function bytes(name) {
  const url = new URL(name, location.href);
  if (url.protocol !== "file:") return fetch(url).then((r) => r.arrayBuffer()).then((b) => new Uint8Array(b));
  return new Promise((resolve, reject) => {
    const r = new XMLHttpRequest();
    r.open("GET", url.href);
    r.responseType = "arraybuffer";
    r.onload = () => (r.response ? resolve(new Uint8Array(r.response)) : reject(new Error(`cannot read ${name}`)));
    r.onerror = () => reject(new Error(`cannot read ${name}`));
    r.send();
  });
}

// train_data.bin: "TGFM", the training and test image counts (uint32), then each set's pixels
// (784 bytes an image) and labels (a byte each).
function dataset(file) {
  const view = new DataView(file.buffer, file.byteOffset);
  if (String.fromCharCode(...file.subarray(0, 4)) !== "TGFM") throw new Error("train_data.bin is not a tg data file");
  const counts = [view.getUint32(4, true), view.getUint32(8, true)];
  let at = 12;
  const [train, test] = counts.map((n) => {
    const pixels = file.subarray(at, at + 784 * n);
    const labels = file.subarray(at + 784 * n, at + 785 * n);
    at += 785 * n;
    return { n, pixels, labels };
  });
  return { train, test };
}

async function gpuDevice() {
  if (params.get("backend") === "wasm" || !navigator.gpu) return null;
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return null;
  const names = ["maxStorageBuffersPerShaderStage", "maxComputeInvocationsPerWorkgroup",
                 "maxComputeWorkgroupSizeX", "maxStorageBufferBindingSize", "maxBufferSize"];
  return adapter.requestDevice({ requiredLimits: Object.fromEntries(names.map((n) => [n, adapter.limits[n]])) });
}

// A permutation of [0, n) from a seeded generator (the same order on every run).
function shuffled(n, seed) {
  const order = Array.from({ length: n }, (_, i) => i);
  let s = seed >>> 0;
  for (let i = n - 1; i > 0; --i) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

// The predicted label of every test image, by `classify` in batches of up to `most`.
async function predict(model, test, most) {
  const labels = new Array(test.n);
  for (let first = 0; first < test.n; first += most) {
    const count = Math.min(most, test.n - first);
    const { probs } = await model.classify({ pixels: test.pixels.subarray(784 * first, 784 * (first + count)) });
    for (let i = 0; i < count; ++i) {
      const row = probs.subarray(10 * i, 10 * i + 10);
      labels[first + i] = row.indexOf(Math.max(...row));
    }
  }
  return labels;
}

// The loss of each step (smoothed, left axis) and the test accuracy (right axis).
function draw(losses, accuracy) {
  const canvas = document.getElementById("chart");
  const g = canvas.getContext("2d");
  const [w, h, left, bottom] = [canvas.width, canvas.height, 40, 20];
  g.clearRect(0, 0, w, h);
  g.font = "11px system-ui";
  g.strokeStyle = "#ccc";
  g.strokeRect(left, 4, w - 2 * left, h - bottom - 4);
  const top = Math.max(2.5, ...losses.slice(0, 5));
  const x = (k) => left + ((w - 2 * left) * k) / Math.max(STEPS, 1);
  const y = (v, max) => 4 + (h - bottom - 4) * (1 - Math.min(v / max, 1));
  g.fillStyle = "#555";
  for (const v of [0, top / 2, top]) g.fillText(v.toFixed(1), 4, y(v, top) + 4);
  for (const v of [0, 50, 100]) g.fillText(`${v}%`, w - left + 4, y(v, 100) + 4);
  g.fillText(`step ${losses.length} of ${STEPS}`, w / 2 - 30, h - 4);
  g.strokeStyle = "#4a7bd0";
  g.beginPath();
  let smooth = losses[0];
  losses.forEach((l, k) => {
    smooth = k ? 0.9 * smooth + 0.1 * l : l;
    k ? g.lineTo(x(k + 1), y(smooth, top)) : g.moveTo(x(k + 1), y(smooth, top));
  });
  g.stroke();
  g.strokeStyle = g.fillStyle = "#d0704a";
  g.beginPath();
  accuracy.forEach(([k, a], i) => (i ? g.lineTo(x(k), y(100 * a, 100)) : g.moveTo(x(k), y(100 * a, 100))));
  g.stroke();
  for (const [k, a] of accuracy) g.fillRect(x(k) - 2, y(100 * a, 100) - 2, 4, 4);
}

// The first test images with the labels the trained model gives them.
function show(test, labels, count) {
  const grid = document.getElementById("samples");
  for (let i = 0; i < count; ++i) {
    const card = document.createElement("div");
    card.className = labels[i] === test.labels[i] ? "card" : "card wrong";
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 28;
    const image = canvas.getContext("2d").createImageData(28, 28);
    for (let p = 0; p < 784; ++p) {
      image.data.fill(test.pixels[784 * i + p], 4 * p, 4 * p + 3);
      image.data[4 * p + 3] = 255;
    }
    canvas.getContext("2d").putImageData(image, 0, 0);
    card.append(canvas);
    card.insertAdjacentHTML("beforeend", `<b>${CLASSES[labels[i]]}</b><div class="truth">true: ${CLASSES[test.labels[i]]}</div>`);
    grid.append(card);
  }
}

try {
  const { train, test } = dataset(await bytes("train_data.bin"));
  const device = await gpuDevice();
  const backend = device ? "webgpu" : "wasm";
  const { create, METHODS } = await import(`./train/${backend}/mlp_train.js`);
  const model = device ? await create(device) : await create();
  const batch = METHODS.step.inputs[0][2][0]; // step(pixels: uint8[batch, 784], labels: int32[batch])
  const most = METHODS.classify.dims[0][2]; // classify's largest batch
  const evaluateEvery = Math.max(1, Math.round(STEPS / 8));
  const losses = [], accuracy = [];
  const pixels = new Uint8Array(784 * batch), labels = new Int32Array(batch);
  let order = [], ms = 0;
  const score = async (k) => {
    const predicted = await predict(model, test, most);
    const a = predicted.filter((l, i) => l === test.labels[i]).length / test.n;
    accuracy.push([k, a]);
    console.log(`tg-web accuracy ${k} ${a.toFixed(4)}`);
    return predicted;
  };
  await score(0);
  for (let k = 0; k < STEPS; ++k) {
    for (let i = 0; i < batch; ++i) {
      if (!order.length) order = shuffled(train.n, k + 1);
      const j = order.pop();
      pixels.set(train.pixels.subarray(784 * j, 784 * j + 784), 784 * i);
      labels[i] = train.labels[j];
    }
    const t0 = performance.now();
    const { loss } = await model.step({ pixels, labels });
    ms += performance.now() - t0;
    losses.push(loss[0]);
    if ((k + 1) % evaluateEvery === 0 && k + 1 < STEPS) await score(k + 1);
    if (k % 5 === 4 || k + 1 === STEPS) {
      status.textContent = `training on ${backend === "webgpu" ? "WebGPU" : "WebAssembly"}: step ${k + 1} of ${STEPS}, loss ${loss[0].toFixed(3)}, ${(ms / (k + 1)).toFixed(1)} ms a step`;
      draw(losses, accuracy);
      await new Promise((r) => setTimeout(r, 0)); // let the page draw
    }
  }
  const predicted = await score(STEPS);
  draw(losses, accuracy);
  show(test, predicted, 40);
  const right = accuracy[accuracy.length - 1][1];
  status.textContent = `trained ${STEPS} steps of ${batch} images on ${backend === "webgpu" ? "WebGPU" : "WebAssembly"} (${(ms / STEPS).toFixed(1)} ms a step): ${(100 * right).toFixed(1)}% of ${test.n} test images right`;
  const download = document.getElementById("download");
  download.disabled = false;
  download.onclick = async () => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([await model.saveWeights()], { type: "application/octet-stream" }));
    a.download = "fashion_mnist_mlp_trained.safetensors";
    a.click();
  };
  console.log(`tg-web labels ${predicted.join(",")}`);
  console.log(`tg-web done ${backend} ${STEPS} ${(ms / STEPS).toFixed(2)}`);
} catch (e) {
  status.textContent = `error: ${e.message}`;
  console.log(`tg-web error ${e.message}`);
}
