// Validates WGSL files with Dawn's Null backend (npm package `webgpu`, found through NODE_PATH):
// each file is a shader module (`enable f16;` allowed) whose compute pipeline must be created without an error. Prints
// the errors of each rejected file; exits 1 when any was rejected. Used by tests/test_wgsl.cpp.
const fs = require('fs');
const { create, globals } = require('webgpu');
Object.assign(globalThis, globals);

async function main(files) {
  globalThis.tgGpu = create(['backend=null']); // kept reachable: dawn.node crashes otherwise
  const adapter = await globalThis.tgGpu.requestAdapter();
  if (!adapter) throw new Error('no Null adapter');
  const device = await adapter.requestDevice({ requiredFeatures: ['shader-f16'], requiredLimits: {
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupSizeX: adapter.limits.maxComputeWorkgroupSizeX,
    maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
  } });
  let rejected = 0;
  for (const f of files) {
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: fs.readFileSync(f, 'utf8') });
    const info = await module.getCompilationInfo();
    device.createComputePipeline({ layout: 'auto', compute: { module } });
    const error = await device.popErrorScope();
    const messages = info.messages.filter((m) => m.type === 'error');
    if (messages.length === 0 && !error) continue;
    ++rejected;
    console.log(`rejected: ${f}`);
    for (const m of messages) console.log(`  ${m.lineNum}:${m.linePos} ${m.message}`);
    if (error) console.log(`  ${error.message.split('\n').slice(0, 6).join('\n  ')}`);
  }
  console.log(`${files.length} shaders validated by Dawn (Null backend), ${rejected} rejected`);
  delete globalThis.tgGpu;
  return rejected === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then((rc) => { process.exitCode = rc; }, (e) => {
  console.log(`validator failed: ${e.message}`);
  process.exitCode = 2;
});
