/** File-drop sink: each event atomically into a directory, named by source + id. */
export { createFileDropSink, eventFileContent, eventFilePath } from './sink.js';
export { fileDropOptionsFrom, fileDropSettingsSchema } from './options.js';
export type { FileDropOptions, FileDropSettings, ParsedFileDropSettings } from './options.js';
export { MAX_PLAIN_NAME, encodeNamePart, eventDirName, eventFileName } from './file-name.js';
export { STALE_TEMP_AGE_MS, TEMP_NAME, makeDirectories, removeStaleTempFiles, tempNameFor, writeFileAtomic } from './atomic-write.js';
export type { AtomicFs } from './atomic-write.js';
